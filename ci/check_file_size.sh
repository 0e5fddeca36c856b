#!/usr/bin/env bash
# Fails when a source file in the code folders exceeds the line limit
# (STYLE.md: files under 600 lines, reviewable in one sitting).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

limit=${LOOM_MAX_FILE_LINES:-600}
dirs=(engine reference conformance fuzz replay bench examples python)
pattern='\.(h|hpp|inc|def|c|cc|cpp|cu|cuh|py|cmake)$|CMakeLists\.txt$'

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files plus new ones not yet added (but not ignored ones).
  while IFS= read -r f; do files+=("$f"); done < <(
    git ls-files --cached --others --exclude-standard -- "${dirs[@]}" | grep -E "$pattern" || true)
else
  while IFS= read -r f; do files+=("$f"); done < <(
    find "${dirs[@]}" -type f 2>/dev/null | grep -E "$pattern" || true)
fi

bad=0
for f in "${files[@]}"; do
  [[ -f $f ]] || continue  # deleted in the work tree, still in the index
  n=$(wc -l <"$f")
  if ((n > limit)); then
    echo "check_file_size: $f has $n lines (limit $limit); split it" >&2
    bad=1
  fi
done
if ((bad)); then exit 1; fi
echo "check_file_size: ${#files[@]} files, none over $limit lines"
