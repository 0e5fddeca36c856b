#!/usr/bin/env bash
# THE main job: installs what it needs, builds loom's Python module, and
# trains examples/hlb_cifar10/train.py (a plain PyTorch script, unmodified)
# through the shim on Fashion-MNIST from Debian's dataset-fashion-mnist:
# a progress bar per epoch, each epoch's test accuracy, the engine's kernel
# and compile counts at the end, and a loss/accuracy plot in a PNG.
#   ci/train.sh                 # PLOT=fashion.png in the build dir
#   EPOCHS=2 WIDTH=32 ci/train.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${LOOM_BUILD_DIR:-build}

ci/install_deps.sh dataset-fashion-mnist python3-tqdm python3-matplotlib
LOOM_TARGETS="loom_python loom_python_package" ci/build.sh
data=$build_dir/fashion-mnist
[[ -f $data/cifar-10-batches-py/test_batch ]] || /usr/bin/python3 examples/hlb_cifar10/fashion_to_cifar.py "$data"

export DATA=$data PROGRESS=1 PLOT=${PLOT:-$PWD/$build_dir/fashion.png}
export EPOCHS=${EPOCHS:-1} BS=${BS:-256} WIDTH=${WIDTH:-16}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
PYTHONPATH=$build_dir/python /usr/bin/python3 -m loom.run --stats examples/hlb_cifar10/train.py
