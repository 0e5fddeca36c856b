#!/usr/bin/env bash
# Fails when a pipeline stage includes a later one (DESIGN.md's include
# rule): engine/src/<stage> may include loom/ headers, its own folder and the
# folders before it in this order.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

order=(knobs dtype shape uop schedule codegen renderer runtime engine jit tensor autograd nn)
status=0
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
exit "$status"
