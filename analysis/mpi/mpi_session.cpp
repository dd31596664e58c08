#include "analysis/mpi/mpi_session.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/errors.h"

namespace sb::analysis {
namespace {

constexpr int64_t kChunk = int64_t{1} << 28;  // doubles per MPI call: 2 GiB, within int counts

void check(int code, const char* what) {
  // internal: MPI_COMM_WORLD keeps its default handler MPI_ERRORS_ARE_FATAL (never changed here),
  // so a failing MPI call aborts the job before it can return an error code to this check.
  if (code != MPI_SUCCESS) throw std::logic_error(std::string("MPI: ") + what + " failed");
}

// op over n doubles in place, in chunks.
void allreduce(double* data, int64_t n, MPI_Op op) {
  for (int64_t i = 0; i < n; i += kChunk)
    check(MPI_Allreduce(MPI_IN_PLACE, data + i, static_cast<int>(std::min(kChunk, n - i)),
                        MPI_DOUBLE, op, MPI_COMM_WORLD),
          "MPI_Allreduce");
}

void reduce_to_root(double* data, int64_t n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int64_t i = 0; i < n; i += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, n - i));
    check(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : data + i, data + i, count, MPI_DOUBLE, MPI_SUM, 0,
                     MPI_COMM_WORLD),
          "MPI_Reduce");
  }
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

}  // namespace

bool launched_by_mpi() {
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || env_int("PMIX_SIZE") > 1;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  check(MPI_Init(argc, argv), "MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, &collective_.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &collective_.size);
  // srun started several tasks, but MPI sees one: srun's MPI plugin is not one OpenMPI reads
  // (e.g. --mpi=none), and every task would analyse the whole matrix and write the same files.
  const int step_tasks = env_int("SLURM_STEP_NUM_TASKS");
  if (step_tasks > 1 && collective_.size == 1) {
    MPI_Finalize();
    throw OptionError::described(
        "--mpi",
        "--mpi: srun started " + std::to_string(step_tasks) +
            " tasks but MPI sees a single process: run srun --mpi=pmix (or set MpiDefault=pmix in "
            "slurm.conf), so that OpenMPI joins the tasks into one job");
  }
  collective_.allreduce_sum = [](double* d, int64_t n) { allreduce(d, n, MPI_SUM); };
  collective_.allreduce_max = [](double* d, int64_t n) { allreduce(d, n, MPI_MAX); };
  collective_.reduce_sum_to_root = reduce_to_root;
}

MpiSession::~MpiSession() { MPI_Finalize(); }

}  // namespace sb::analysis
