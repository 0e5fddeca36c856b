#!/usr/bin/env bash
# Fails when a LOOM_* environment variable is read outside the knobs module
# (engine/src/knobs), or when the README's "Environment knobs" list and the
# module's table (kKnobs in knobs.cpp) name different variables or the same
# ones in another order.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

status=0
while IFS= read -r hit; do
  echo "check_knobs: $hit: reads a LOOM_* variable outside engine/src/knobs" >&2
  status=1
done < <(grep -rnE 'getenv\("LOOM_' engine/src python/src | grep -v '^engine/src/knobs/' || true)

table=$(sed -n '/kKnobs\[\] = {/,/^};/p' engine/src/knobs/knobs.cpp | grep -oE '"LOOM_[A-Z_]+"' | tr -d '"')
readme=$(sed -n '/^## Environment knobs/,/^## /p' README.md | grep -oE '^- `LOOM_[A-Z_]+`' | grep -oE 'LOOM_[A-Z_]+')
if [[ "$table" != "$readme" ]]; then
  echo "check_knobs: README's knobs and engine/src/knobs/knobs.cpp's table differ:" >&2
  diff <(echo "$readme") <(echo "$table") >&2 || true
  status=1
fi
((status == 0)) && echo "check_knobs: every knob is read in the knobs module and listed in the README, in its order"
exit "$status"
