#!/usr/bin/env bash
# Configures (CMake + Ninja, ccache through the root CMakeLists' launcher) and
# builds loom. Build dir: $LOOM_BUILD_DIR or build/. Extra arguments go to cmake.
# LOOM_TARGETS (space-separated) limits the build to those ninja targets.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

build_dir=${LOOM_BUILD_DIR:-build}
export CCACHE_DIR=${CCACHE_DIR:-$root/.ccache}

source ci/timing.sh
timed configure cmake -S . -B "$build_dir" -G Ninja "$@"
read -r -a targets <<<"${LOOM_TARGETS:-}"
timed build ninja -C "$build_dir" -j "$(nproc)" "${targets[@]}"
