#!/bin/sh
# cmake/torch_prefix.sh [PYTHON]: the CMake prefix of the LibTorch inside PYTHON's pip torch wheel
# (torch.utils.cmake_prefix_path), checked to hold Torch/TorchConfig.cmake; for
#   cmake -DCMAKE_PREFIX_PATH="$(cmake/torch_prefix.sh ~/venv/bin/python)" ...
# or `make build TORCH_PYTHON=~/venv/bin/python BUILD_DIR=build-cuda`. Exit 1 with one line on
# stderr when PYTHON has no torch or its torch ships no CMake files (Debian's python3-torch).
python=${1:-python3}
prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || {
  echo "torch_prefix.sh: '$python' cannot import torch (pip install torch into that Python first)" >&2
  exit 1
}
if [ ! -f "$prefix/Torch/TorchConfig.cmake" ]; then
  echo "torch_prefix.sh: $prefix/Torch/TorchConfig.cmake not found: the torch of '$python' ships no LibTorch CMake files (Debian's python3-torch does not; a pip wheel from pytorch.org does)" >&2
  exit 1
fi
echo "$prefix"
