#include "trainers/runkit/process_setup.h"

#include <malloc.h>
#include <torch/torch.h>

#include <climits>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/errors.h"

namespace sb::runkit {

int set_threads(int64_t threads) {
  if (threads < 0)
    throw OptionError("threads", "0 (= cores) or a positive count", std::to_string(threads));
  const int n = threads > 0 ? static_cast<int>(threads)
                            : static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(n);  // one setting for LibTorch and the OpenMP OpenBLAS
  return n;
}

void keep_freed_memory() {
  // mallopt returns 1 on success, 0 on error.
  if (mallopt(M_MMAP_MAX, 0) != 1 || mallopt(M_TRIM_THRESHOLD, INT_MAX) != 1)
    // internal: no input reaches this: glibc's mallopt accepts both settings; only another
    // allocator replacing it (a sanitizer's interceptor) refuses them.
    throw std::logic_error("mallopt(M_MMAP_MAX = 0, M_TRIM_THRESHOLD = INT_MAX) failed");
}

int set_up_process(int64_t threads) {
  keep_freed_memory();
  return set_threads(threads);
}

}  // namespace sb::runkit
