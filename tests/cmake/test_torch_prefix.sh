#!/bin/bash
# cmake/torch_prefix.sh: prints torch.utils.cmake_prefix_path of a Python whose torch ships
# Torch/TorchConfig.cmake (a pip wheel), and fails with one line naming the file otherwise. The
# wheel is a stand-in (a fake "python" printing a prefix made here): no pip torch on this machine.
set -u
script="$(dirname "$0")/../../cmake/torch_prefix.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }

mkdir -p "$tmp/wheel/share/cmake/Torch"
touch "$tmp/wheel/share/cmake/Torch/TorchConfig.cmake"
printf '#!/bin/sh\necho %s\n' "$tmp/wheel/share/cmake" > "$tmp/python-wheel"
printf '#!/bin/sh\necho %s\n' "$tmp/nowhere" > "$tmp/python-no-cmake"
printf '#!/bin/sh\nexit 1\n' > "$tmp/python-no-torch"
chmod +x "$tmp"/python-*

out=$("$script" "$tmp/python-wheel" 2>&1); rc=$?
check '[ $rc -eq 0 ] && [ "$out" = "$tmp/wheel/share/cmake" ]' "a wheel's prefix is printed ($out)"
out=$("$script" "$tmp/python-no-cmake" 2>&1); rc=$?
check '[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"$tmp/nowhere/Torch/TorchConfig.cmake not found"* ]]' \
  "a torch without CMake files: exit 1, one line naming the missing file"
out=$("$script" "$tmp/python-no-torch" 2>&1); rc=$?
check '[ $rc -eq 1 ] && [[ "$out" == *"cannot import torch"* ]]' "no torch: exit 1 saying so"
exit $fail
