# Cold code: the test programs (tests/), the thin mains and the command-line front ends run once
# per process and spend their time in the libraries below them, which keep the build type's -O3.
# Their translation units are what the build spends most of its time on (LibTorch's and Catch2's
# templates instantiated again in each), and at -O1 GCC compiles them in ~2/3 of the time
# (measured: tests/trainers/classifier/test_classifier.cpp 44 s -> 30 s; a trainer's 12-line
# main.cpp 44 s -> 29 s). -O1 still defines __OPTIMIZE__, so the -O3 precompiled <torch/torch.h>
# (cmake/TorchPch.cmake) stays valid for them (-Winvalid-pch would say otherwise). Numbers do not
# change: GCC's optimisation levels do not reorder floating-point operations (no -ffast-math, no
# FP contraction under -std=c++17), and every hot loop is in a library.
set(SB_COLD_OPTIMIZATION "-O1" CACHE STRING
    "Optimisation level of tests, mains and command-line front ends (empty: the build type's)")

# The generator expression for target_compile_options / add_compile_options: the cold level in
# the optimised build types, nothing in Debug (whose -O0 the precompiled header shares).
set(SB_COLD_OPTIONS "$<$<CONFIG:Release,RelWithDebInfo>:${SB_COLD_OPTIMIZATION}>")

# sb_cold(TARGET...): compile these targets' own sources at SB_COLD_OPTIMIZATION.
function(sb_cold)
  foreach(target ${ARGN})
    target_compile_options(${target} PRIVATE ${SB_COLD_OPTIONS})
  endforeach()
endfunction()
