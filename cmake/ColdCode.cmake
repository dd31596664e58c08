# Cold code: the test programs (tests/) and rank_analysis's command line run once per process
# and spend their time in the libraries below them, which keep the build type's -O3. The test
# programs' translation units take nearly half of the build's compiler time (LibTorch's and
# Catch2's templates instantiated again in each), and at -O1 GCC compiles them in ~2/3 of the
# time (measured: tests/trainers/classifier/test_classifier.cpp 44 s -> 30 s). -O1 still
# defines __OPTIMIZE__, so the -O3 precompiled <torch/torch.h> (cmake/TorchPch.cmake) stays
# valid for them (-Winvalid-pch would say otherwise). Numbers do not change: GCC's optimisation
# levels do not reorder floating-point operations (no -ffast-math, no FP contraction under
# -std=c++17), and every hot loop is in a library. (The binaries' mains need no level of their
# own: each calls its library's program without including LibTorch, cmake/Dependencies.cmake.)
set(SB_COLD_OPTIMIZATION "-O1" CACHE STRING
    "Optimisation level of the tests and the command line (empty: the build type's)")

# The generator expression for target_compile_options / add_compile_options: the cold level in
# the optimised build types, nothing in Debug (whose -O0 the precompiled header shares).
set(SB_COLD_OPTIONS "$<$<CONFIG:Release,RelWithDebInfo>:${SB_COLD_OPTIMIZATION}>")

# sb_cold(TARGET...): compile these targets' own sources at SB_COLD_OPTIMIZATION.
function(sb_cold)
  foreach(target ${ARGN})
    target_compile_options(${target} PRIVATE ${SB_COLD_OPTIONS})
  endforeach()
endfunction()
