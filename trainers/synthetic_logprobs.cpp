#include "trainers/synthetic_logprobs.h"

#include <torch/torch.h>

#include <cmath>

#include "common/errors.h"
#include "contract/logprob_file.h"
#include "trainers/heads/output_head.h"

namespace sb {

double write_synthetic_logprobs(const std::string& path, const SyntheticOptions& o) {
  if (o.tokens < 1 || o.vocab < 1 || o.d < 1 || o.block_rows < 1)
    throw OptionError::described("", "synthetic: T, M, d and block rows must be >= 1");
  if (o.dtype != "float32" && o.dtype != "float64")
    throw OptionError::described(
        "--dtype", "synthetic: --dtype must be float32 or float64, got '" + o.dtype + "'");
  if (o.logits && (is_mixture(o.spec) || is_adaptive(o.spec)))
    throw OptionError::described("--logits",
                                 "synthetic: --logits with head '" + o.spec.to_string() +
                                     "': a mixture or an adaptive head has several logit vectors "
                                     "per row, not one; use a single head");
  check_head_fits(o.spec, o.vocab, "columns (--M)");
  torch::NoGradGuard no_grad;
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  const auto dtype = o.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

  // Decoder: logits = h W^T + b with std ~ logit_scale for h ~ N(0, I_d).
  const auto weight =
      (torch::randn({o.vocab, o.d}, f64) * (o.logit_scale / std::sqrt(double(o.d)))).to(dtype);
  const auto bias = o.bias ? (torch::randn({o.vocab}, f64) * 0.5).to(dtype) : torch::Tensor();
  heads::OutputHead head(
      heads::OutputHeadOptions(o.spec, o.d, o.d).vocab_size(o.vocab).decoder_bias(o.bias));
  head->to(dtype);

  const std::string config = "head = \"" + o.spec.to_string() +
                             "\"\nT = " + std::to_string(o.tokens) +
                             "\nM = " + std::to_string(o.vocab) + "\nd = " + std::to_string(o.d) +
                             "\nbias = " + (o.bias ? "true" : "false") +
                             "\nlogit_scale = " + std::to_string(o.logit_scale) + "\n";
  auto header = contract::make_header(o.spec, o.d, o.bias, o.vocab, o.tokens,
                                      {"synthetic", "synthetic", o.seed, config, {}}, o.dtype);
  if (o.logits) header.input = "logits";
  contract::LogProbWriter writer(path, header);
  for (int64_t r = 0; r < o.tokens; r += o.block_rows) {
    const int64_t n = std::min(o.block_rows, o.tokens - r);
    const auto h = torch::randn({n, o.d}, f64).to(dtype);  // (n, d)
    const auto log_p =
        (o.logits ? (bias.defined() ? torch::addmm(bias, h, weight.t()) : h.matmul(weight.t()))
                  : head(h, weight, bias))
            .to(torch::kFloat32)
            .contiguous();                                      // (n, M)
    const auto targets = log_p.argmax(/*dim=*/1).contiguous();  // (n,)
    writer.write_rows(log_p.data_ptr<float>(), targets.data_ptr<int64_t>(), n);
  }
  return writer.finish();
}

}  // namespace sb
