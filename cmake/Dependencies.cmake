# Every external dependency, found once. `make deps` installs the Debian packages behind them
# (the list lives in the Makefile, DEBIAN_PACKAGES).

# LibTorch: Debian's libtorch-dev by default; any other LibTorch (e.g. a CUDA build) with
#   cmake -DCMAKE_PREFIX_PATH=/path/to/libtorch ...
find_package(Torch REQUIRED)

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
