# sb_torch: LibTorch plus OpenMP. ATen's at::parallel_for is a header-inlined `#pragma omp
# parallel`, so a translation unit compiled without -fopenmp silently runs it on one thread
# (measured: the fused head kernel got no speed-up from 2 threads). Every Torch target links this.
find_package(OpenMP REQUIRED COMPONENTS CXX)
add_library(sb_torch INTERFACE)
target_link_libraries(sb_torch INTERFACE torch OpenMP::OpenMP_CXX)

# <torch/torch.h> costs ~18 s per translation unit. Compile it once into a precompiled header
# owned by a tiny object library and reuse it (REUSE_FROM) in every target that includes Torch.
# Reuse needs identical compile flags, so every Torch target links sb_torch and calls
# sb_use_torch_pch().
option(SB_USE_PCH "Precompile <torch/torch.h>" ON)

add_library(sb_torch_pch OBJECT "${CMAKE_CURRENT_LIST_DIR}/torch_pch.cpp")
target_link_libraries(sb_torch_pch PUBLIC sb_torch sb_warnings)
if(SB_USE_PCH)
  target_precompile_headers(sb_torch_pch PRIVATE <torch/torch.h>)
endif()

# sb_torch_free(SOURCES...): sources of a Torch target that include no Torch header skip the
# precompiled header: loading its ~570 MB image costs each of them 10-30 s of a build it does not
# need. Call it in the folder that lists the sources. tests/cmake/check_torch_pch.py fails on a
# source compiled with the header that reaches no Torch include.
function(sb_torch_free)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_PRECOMPILE_HEADERS ON
                                                 SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# Unity builds of the Torch targets: most of a Torch translation unit's time goes to
# instantiating and compiling the same LibTorch templates again (measured: five heads sources,
# 61 s of CPU one by one, 23 s as one unit). CMake compiles a target's sources in batches of
# eight, each batch one unit that includes them; sb_torch_free() sources stay on their own.
# Numbers do not change (no -ffast-math, no FP contraction under -std=c++17: inlining across
# sources cannot reorder a floating-point operation). SB_UNITY_BUILD=OFF builds source by source.
option(SB_UNITY_BUILD "Compile each Torch target's sources in batches (unity build)" ON)

function(sb_use_torch_pch target)
  target_link_libraries(${target} PRIVATE sb_torch sb_warnings)
  if(SB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM sb_torch_pch)
  endif()
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.cpp$")
  list(LENGTH sources count)
  if(SB_UNITY_BUILD AND count GREATER 1)  # a one-source target (a test, a main) gains nothing
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
