#!/usr/bin/python3
"""Only translation units that include Torch pay for the precompiled <torch/torch.h>.

Usage: check_torch_pch.py ROOT BUILD_DIR

cmake/TorchPch.cmake force-includes one ~570 MB precompiled header into every source of a target
that calls sb_use_torch_pch(); a source that reaches no Torch header spends 10-30 s of the build
loading it for nothing, and is listed in sb_torch_free() instead. This reads the compile commands
CMake exported (BUILD_DIR/compile_commands.json) and, for every source compiled with the header,
follows its quoted includes through the repository's own headers: each must reach a <torch/...>,
<ATen/...> or <c10/...> include. A unity batch (SB_UNITY_BUILD, CMake's Unity/unity_N_cxx.cxx)
is one source that includes its members by absolute path: it passes when one of them reaches
Torch, and its members share one load of the header. Then it runs the same scan on a planted Torch-free source and
fails unless that one is flagged: the checker can fail.
"""
import json
import os
import re
import sys
import tempfile

from checks import check, finish

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
TORCH = ("torch/", "ATen/", "c10/")
ANCHOR = "cmake/torch_pch.cpp"  # the precompiled header's own translation unit


def reaches_torch(path, root, memo, seen=()):
    """Whether `path` includes a Torch header, directly or through the repository's headers."""
    if path in memo:
        return memo[path]
    if path in seen:
        return False
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        return False
    found = False
    for name in INCLUDE.findall(text):
        if name.startswith(TORCH):
            found = True
            break
        for base in (root, os.path.dirname(path)):
            candidate = os.path.join(base, name)
            if os.path.isfile(candidate) and reaches_torch(candidate, root, memo, seen + (path,)):
                found = True
                break
        if found:
            break
    memo[path] = found
    return found


def needless(commands, root):
    """The sources compiled with the precompiled header that reach no Torch include."""
    memo = {}
    return sorted(os.path.relpath(e["file"], root) for e in commands
                  if "cmake_pch.hxx" in e["command"] and not e["file"].endswith("cmake_pch.hxx.cxx")
                  and os.path.relpath(e["file"], root) != ANCHOR
                  and not reaches_torch(e["file"], root, memo))


def main():
    root, build = sys.argv[1], sys.argv[2]
    commands = json.load(open(os.path.join(build, "compile_commands.json")))
    under = [e for e in commands if "cmake_pch.hxx" in e["command"]]
    check(len(under) > 20, f"the build compiles sources with the Torch header ({len(under)})")
    wasted = needless(commands, root)
    check(not wasted, "every source compiled with the precompiled Torch header includes Torch "
                      f"(list the others in sb_torch_free(): {wasted})")

    with tempfile.TemporaryDirectory() as tmp:
        planted = os.path.join(tmp, "planted.cpp")
        with open(planted, "w") as f:
            f.write('#include <string>\n#include "planted.h"\n')
        with open(os.path.join(tmp, "planted.h"), "w") as f:
            f.write("#include <vector>\n")
        torchy = os.path.join(tmp, "torchy.cpp")
        with open(torchy, "w") as f:
            f.write('#include "planted.h"\n#include "through.h"\n')
        with open(os.path.join(tmp, "through.h"), "w") as f:
            f.write("#include <ATen/Tensor.h>\n")
        unity_free, unity_mixed = (os.path.join(tmp, f"unity_{i}_cxx.cxx") for i in (0, 1))
        with open(unity_free, "w") as f:
            f.write(f'#include "{planted}"\n')
        with open(unity_mixed, "w") as f:
            f.write(f'#include "{planted}"\n#include "{torchy}"\n')
        fake = [{"file": path, "command": "c++ -include cmake_pch.hxx -c x"}
                for path in (planted, torchy, unity_free, unity_mixed)]
        flagged = needless(fake, tmp)
        check(flagged == ["planted.cpp", "unity_0_cxx.cxx"],
              f"planted: a Torch-free source and a unity batch of Torch-free sources are flagged; "
              f"a source reaching Torch through a header, and a batch including one, are not "
              f"({flagged})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
