#include "trainers/runkit/dump_rows.h"

#include "common/errors.h"

namespace sb::runkit {

void write_rows(contract::LogProbWriter& writer, const torch::Tensor& log_p,
                const torch::Tensor& targets) {
  if (log_p.dim() != 2 || targets.dim() != 1 || log_p.size(0) != targets.size(0))
    throw OptionError::described("log_p",
                                 "write_rows: log_p must be (len, M) and targets (len), got " +
                                     c10::str(log_p.sizes()) + " and " + c10::str(targets.sizes()));
  const auto rows = log_p.to(torch::kCPU, torch::kFloat).contiguous();  // (len, M)
  const auto ids = targets.to(torch::kCPU, torch::kLong).contiguous();  // (len)
  writer.write_rows(rows.data_ptr<float>(), ids.data_ptr<int64_t>(), rows.size(0));
}

}  // namespace sb::runkit
