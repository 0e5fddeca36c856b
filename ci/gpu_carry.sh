#!/usr/bin/env bash
# ci/gpu_carry.sh DIR [MAIN_PY]
# Gathers into DIR, on a Debian machine with the test dependencies
# (ci/install_deps.sh), what ci/gpu_check.sh needs and a GPU machine with a
# pip-installed PyTorch lacks:
#   DIR/prefix   GoogleTest's and RapidCheck's static libraries, headers and
#                CMake packages (gpu_check.sh puts DIR/prefix on
#                CMAKE_PREFIX_PATH); built with the C++11 string ABI, as
#                torch's wheels are since 2.7
#   DIR/main.py  the upstream hlb-CIFAR10 main.py, when MAIN_PY is given
#                (fetched by you; it is not part of this repository)
# Copy DIR to the GPU machine beside the checkout (a few MiB).
set -euo pipefail
dir=${1:?usage: ci/gpu_carry.sh DIR [MAIN_PY]}
main_py=${2:-}

mkdir -p "$dir/prefix"
for pkg in libgtest-dev librapidcheck-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { echo "gpu_carry: $pkg is not installed (ci/install_deps.sh)" >&2; exit 1; }
  # Files only, each at its path under /usr, so that the CMake packages find
  # their libraries and headers relative to themselves.
  dpkg -L "$pkg" | while IFS= read -r f; do
    [[ -f $f && $f == /usr/* && $f != /usr/share/* ]] || continue
    mkdir -p "$dir/prefix/$(dirname "${f#/usr/}")"
    cp -p "$f" "$dir/prefix/${f#/usr/}"
  done
done
if [[ -n $main_py ]]; then
  cp "$main_py" "$dir/main.py"
fi
du -sh "$dir" | awk '{print "gpu_carry: " $2 " holds " $1}'
