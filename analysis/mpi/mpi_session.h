#pragma once
// MPI for rank_analysis --mpi: MPI_Init / MPI_Finalize around the run and the Collective
// (analysis/collective.h) over MPI_COMM_WORLD, with float64 MPI_Allreduce / MPI_Reduce. Built
// only when CMake finds MPI (Debian's libopenmpi-dev).

#include "analysis/collective.h"

namespace sb::analysis {

/// Whether this process was started by an MPI launcher with more than one process (mpirun's
/// OMPI_COMM_WORLD_SIZE, PMI_SIZE of srun and other PMI launchers).
bool launched_by_mpi();

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);  ///< MPI_Init
  ~MpiSession();                        ///< MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  /// Reductions over MPI_COMM_WORLD, in chunks of at most 2^28 doubles (MPI counts are int).
  const Collective& collective() const { return collective_; }

 private:
  Collective collective_;
};

}  // namespace sb::analysis
