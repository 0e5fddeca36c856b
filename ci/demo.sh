#!/usr/bin/env bash
# THE main job: installs deps, builds, and runs the demo; LOOM_DEBUG=2 makes
# the engine print one line per kernel it runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install_deps.sh
LOOM_TARGETS=loom-demo ci/build.sh  # not the tests: the demo needs only the engine
LOOM_DEBUG=2 "${LOOM_BUILD_DIR:-build}/examples/loom-demo"
