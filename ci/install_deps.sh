#!/usr/bin/env bash
# Installs the Debian 12 packages loom needs, and any named as arguments
# (ci/train.sh adds the dataset, tqdm and matplotlib). A no-op (no apt-get at
# all) when everything is installed already, so ci/test.sh can always call it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake ninja-build ccache git
  libtorch-dev python3-torch          # the reference oracle (reference/)
  librapidcheck-dev googletest libgtest-dev libbenchmark-dev
  pybind11-dev python3-dev python3-numpy python3-pytest
  # pip install ./python into a fresh venv (python/tests/test_package.py)
  python3-pip python3-setuptools python3-wheel python3-venv
  # clang and its libFuzzer runtime: the libFuzzer harnesses and the
  # sanitizer build (fuzz/libfuzzer/run.sh, ci/sanitize.sh)
  clang libclang-rt-14-dev
  # Without it libtorch's matmul uses Debian's reference BLAS (~5 GFLOP/s
  # instead of ~160-190 on 2 cores) and every matmul comparison crawls.
  libopenblas0-pthread
  # The viewer (python3 -m loom.viz): Graphviz lays out its graphs; its test
  # opens the page in headless Chromium (python/tests/test_viz.py).
  graphviz chromium-headless-shell
  # torch.distributed's CPU backend: Open MPI's libmpi (loaded at run time),
  # mpirun (python3 -m loom.run --nproc N) and mpicc (bench/allreduce).
  openmpi-bin libopenmpi-dev
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all ${#packages[@]} packages installed"
fi

# libopenblas0-pthread registers itself as the libblas.so.3 alternative; if
# someone pinned the reference BLAS, say so rather than run 40x slower.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
if [[ -n $blas && $blas != *openblas* ]]; then
  echo "install_deps: warning: libblas.so.3 resolves to $blas, not OpenBLAS;" \
    "run: update-alternatives --auto libblas.so.3-x86_64-linux-gnu" >&2
fi
