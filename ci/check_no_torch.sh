#!/usr/bin/env bash
# Fails when a binary depends on libtorch: only the reference oracle and the
# conformance checks may (DESIGN.md). Reads the binary's own NEEDED entries
# (readelf -d) and, where ldd runs, every shared library it would load.
# usage: ci/check_no_torch.sh BINARY...
set -euo pipefail

if (($# == 0)); then
  echo "usage: $0 BINARY..." >&2
  exit 2
fi
command -v readelf >/dev/null || { echo "check_no_torch: readelf not found (binutils)" >&2; exit 2; }

torch='lib(torch|c10)[a-z_]*\.so'
bad=0
for bin in "$@"; do
  [[ -f $bin ]] || { echo "check_no_torch: $bin: no such file" >&2; exit 2; }
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [[ -n $needed ]] || { echo "check_no_torch: $bin: no NEEDED entries (not a dynamic ELF binary?)" >&2; exit 2; }
  loaded=$(ldd "$bin" 2>/dev/null | awk '{print $1}' || true)
  hits=$(printf '%s\n%s\n' "$needed" "$loaded" | grep -E "$torch" | sort -u || true)
  if [[ -n $hits ]]; then
    echo "check_no_torch: $bin links libtorch:" $hits >&2
    bad=1
  else
    echo "check_no_torch: $(basename "$bin"): no libtorch ($(wc -w <<<"$needed") direct libraries)"
  fi
done
exit "$bad"
