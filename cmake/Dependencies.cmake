# Every external dependency, found once. `make deps` installs the Debian packages behind them
# (the list lives in the Makefile, DEBIAN_PACKAGES).

# LibTorch: Debian's libtorch-dev (CPU) by default; any other LibTorch, e.g. a CUDA build, with
#   cmake -DCMAKE_PREFIX_PATH=/path/to/libtorch ...           (make TORCH_PREFIX=...)
#   cmake -DCMAKE_PREFIX_PATH=$(cmake/torch_prefix.sh PYTHON)  (make TORCH_PYTHON=...: a pip wheel)
if(NOT SB_PYTHON_ONLY)  # the Python package needs no LibTorch
  find_package(Torch REQUIRED)
  # Which device support it has, said once at configure time (docs/clusters-and-gpus.md, "CUDA builds").
  if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA OR TARGET torch_cuda)
    set(SB_TORCH_CUDA ON)
    if(CUDAToolkit_VERSION)  # LibTorch 2.x finds CUDA with FindCUDAToolkit, 1.x with FindCUDA
      set(_sb_cuda " (CUDA ${CUDAToolkit_VERSION})")
    elseif(CUDA_VERSION)
      set(_sb_cuda " (CUDA ${CUDA_VERSION})")
    endif()
    message(STATUS "LibTorch ${Torch_VERSION} (${Torch_DIR}): CUDA support found${_sb_cuda}: "
                   "--device cuda runs on the GPU where one is visible")
  else()
    set(SB_TORCH_CUDA OFF)
    message(STATUS "LibTorch ${Torch_VERSION} (${Torch_DIR}): CPU only (no CUDA in this "
                   "LibTorch): --device cuda exits 2; for GPUs see docs/clusters-and-gpus.md, \"CUDA builds\"")
  endif()
  # Every library of ours and Debian's HDF5 C++ API use the C++11 std::string ABI. A LibTorch built
  # with the old one (pip wheels before torch 2.7, the "pre-cxx11 ABI" zips) cannot be mixed in.
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
    message(FATAL_ERROR "LibTorch at ${Torch_DIR} uses the pre-C++11 std::string ABI "
                        "(TORCH_CXX_FLAGS: ${TORCH_CXX_FLAGS}), which cannot be linked with the "
                        "C++11-ABI libraries of this project (HDF5's C++ API, our own): use the "
                        "cxx11-ABI LibTorch zip from pytorch.org or a pip torch >= 2.7")
  endif()
endif()

find_package(HDF5 REQUIRED COMPONENTS C CXX)
add_library(sb_hdf5 INTERFACE)
target_include_directories(sb_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(sb_hdf5 INTERFACE ${HDF5_LIBRARIES} ${HDF5_CXX_LIBRARIES})
target_compile_definitions(sb_hdf5 INTERFACE ${HDF5_DEFINITIONS})

# LAPACKE + CBLAS (OpenBLAS provides both BLAS and LAPACK behind Debian's alternatives).
find_path(LAPACKE_INCLUDE_DIR lapacke.h REQUIRED)
find_library(LAPACKE_LIBRARY lapacke REQUIRED)
find_library(LAPACK_LIBRARY lapack REQUIRED)
find_library(OPENBLAS_LIBRARY openblas REQUIRED)
add_library(sb_lapack INTERFACE)
target_include_directories(sb_lapack SYSTEM INTERFACE ${LAPACKE_INCLUDE_DIR})
target_link_libraries(sb_lapack INTERFACE ${LAPACKE_LIBRARY} ${LAPACK_LIBRARY} ${OPENBLAS_LIBRARY})

find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(Threads REQUIRED)
if(SB_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
if(SB_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# Threading: Debian's default OpenBLAS (the alternatives' choice) is the pthread build. LibTorch
# runs its own OpenMP pool, and the two pools oversubscribe the cores (measured: training 3-4x
# slower on 2 cores). Every executable we build therefore resolves libblas/liblapack/libopenblas
# from the OpenMP build first: DT_RPATH (not RUNPATH) applies to the libraries LibTorch loads too.
set(SB_OPENBLAS_OPENMP_DIR "/usr/lib/x86_64-linux-gnu/openblas-openmp"
    CACHE PATH "Directory of the OpenMP OpenBLAS (empty: use the system default)")
add_library(sb_runtime_blas INTERFACE)
if(SB_OPENBLAS_OPENMP_DIR AND EXISTS "${SB_OPENBLAS_OPENMP_DIR}/libopenblas.so.0")
  target_link_options(sb_runtime_blas INTERFACE
    "LINKER:--disable-new-dtags" "LINKER:-rpath,${SB_OPENBLAS_OPENMP_DIR}")
  target_compile_definitions(sb_runtime_blas INTERFACE
    SB_OPENBLAS_OPENMP_DIR="${SB_OPENBLAS_OPENMP_DIR}")
else()
  message(WARNING "OpenMP OpenBLAS not found in '${SB_OPENBLAS_OPENMP_DIR}': binaries use the "
                  "system BLAS, which may oversubscribe cores (install libopenblas0-openmp)")
endif()

# sb_executable(NAME SOURCES...): every binary links the warning set and the BLAS runtime choice.
function(sb_executable name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE sb_warnings sb_runtime_blas)
endfunction()

# sb_trainer(KIND FOLDER): a row of the trainer registry. FOLDER (relative to the calling
# CMakeLists.txt) holds one trainer (docs/design.md, "Adding a trainer"): its CMakeLists.txt
# defines a library named after the folder, whose cli_main runs runkit::trainer_main over the
# trainer's descriptor, and its main.cpp calls cli_main (declared there, not included: a
# LibTorch translation unit costs ~25 s to compile, this one well under a second). The row builds
# <build>/trainers/train_<KIND>, where the pipeline finds every trainer and reads what it needs
# from `train_<KIND> --describe --json`.
# Each row is also recorded (global property SB_TRAINER_REGISTRY, "kind folder library" with the
# folder relative to the project root): the link graph, the design test and the --describe test
# read the registry from <build>/trainer_registry.txt, so no other file lists the trainers.
function(sb_trainer kind folder)
  add_subdirectory(${folder})
  get_filename_component(library ${folder} NAME)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${folder})
  set_property(GLOBAL APPEND PROPERTY SB_TRAINER_REGISTRY "${kind} ${rel} ${library}")
  set(main ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/main.cpp)
  sb_executable(train_${kind} ${main})
  target_link_libraries(train_${kind} PRIVATE ${library})
  sb_use_torch_pch(train_${kind})
  sb_torch_free(${main})
  set_target_properties(train_${kind} PROPERTIES
                        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/trainers)
endfunction()
