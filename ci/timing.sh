#!/usr/bin/env bash
# Phase timing for the CI scripts (source it). `timed NAME CMD...` runs CMD and,
# when LOOM_TIMING_FILE is set, appends "NAME<TAB>SECONDS" to it; ci/test.sh
# prints the phases at its end (ci/timing_report.py). Returns CMD's status.
timed() {
  local name=$1 t0=$EPOCHREALTIME status=0
  shift
  "$@" || status=$?
  if [[ -n ${LOOM_TIMING_FILE:-} ]]; then
    printf '%s\t%s\n' "$name" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" >>"$LOOM_TIMING_FILE"
  fi
  return "$status"
}
