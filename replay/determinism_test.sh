#!/usr/bin/env bash
# Records the corpus twice, in two separate processes, and requires
# byte-identical snapshots: no pointers, hash order, times or paths leak in.
set -euo pipefail
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tool" record --dir "$tmp/a" >/dev/null
"$tool" record --dir "$tmp/b" >/dev/null
diff -r "$tmp/a" "$tmp/b"
echo "replay: two recordings are byte-identical ($(ls "$tmp/a" | wc -l) programs)"
