#!/usr/bin/env bash
# THE test command (.ci/run calls it): installs deps, builds, checks file
# sizes, runs the whole ctest suite. Exits non-zero on any failure.
# One suite by hand: ctest --test-dir build -L engine   (or -L conformance)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start=$SECONDS
# shellcheck disable=SC2317  # called through the EXIT trap
report_time() { echo "test.sh: wall time $((SECONDS - start)) s"; }
trap report_time EXIT
build_dir=${LOOM_BUILD_DIR:-build}

ci/install_deps.sh
ci/build.sh

status=0
ci/check_file_size.sh || status=$?
ctest --test-dir "$build_dir" --output-on-failure -j2 || status=$?
exit "$status"
