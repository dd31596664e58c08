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

function(sb_use_torch_pch target)
  target_link_libraries(${target} PRIVATE sb_torch sb_warnings)
  if(SB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM sb_torch_pch)
  endif()
endfunction()
