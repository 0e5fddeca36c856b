#!/usr/bin/env bash
# Fails when a pipeline stage includes a later one (DESIGN.md's include
# rule): engine/src/<stage> may include loom/ headers, its own folder and the
# folders before it in this order. Given a build directory, also when a
# stage's object files use a symbol only a later stage defines (the same rule
# as the linker sees it: ci/check_symbols.py).
# Usage: ci/check_layering.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

order=(knobs dtype shape uop schedule codegen renderer runtime engine jit tensor autograd nn)
status=0
for dir in engine/src/*/; do
  folder=$(basename "$dir")
  if [[ " ${order[*]} " != *" $folder "* ]]; then
    echo "check_layering: engine/src/$folder is no stage of the order above" >&2
    status=1
  fi
done
for ((i = 0; i < ${#order[@]}; i++)); do
  stage=${order[i]}
  allowed="loom ${order[*]:0:i+1}"
  while IFS=: read -r file line inc; do
    folder=${inc%%/*}
    if [[ " $allowed " != *" $folder "* ]]; then
      echo "check_layering: $file:$line: $stage/ includes $inc (a later stage)" >&2
      status=1
    fi
  done < <(grep -rnoE '^#include "[a-z_]+/[^"]+"' "engine/src/$stage" | sed -E 's/#include "([^"]+)"/\1/')
done
((status == 0)) && echo "check_layering: every stage includes only earlier stages"
if (($# > 0)); then
  python3 ci/check_symbols.py "$1/engine/CMakeFiles/loom.dir/src" "${order[@]}" || status=1
fi
exit "$status"
