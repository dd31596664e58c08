#include "trainers/heads/row_nll_function.h"

#include <ATen/Parallel.h>

#include <atomic>

#include "trainers/heads/kernels/row_nll_dispatch.h"

namespace sb::heads {
namespace {

std::atomic<bool> fused_enabled{true};

bool kernel_takes(const torch::Tensor& logits) {
  return logits.device().is_cpu() &&
         (logits.scalar_type() == torch::kFloat || logits.scalar_type() == torch::kDouble);
}

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

using kernels::grain_rows;

class RowNllFn : public torch::autograd::Function<RowNllFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, bool sigsoftmax) {
    const auto z = logits.contiguous();                    // (R, M)
    const auto t = targets.to(torch::kLong).contiguous();  // (R)
    const int64_t rows = z.size(0), cols = z.size(1);
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    auto loss = torch::empty({rows}, f64);      // (R)
    auto stats = torch::empty({rows, 2}, f64);  // (R, 2): row max, log-normaliser
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_row_nll", [&] {
      const scalar_t* zp = z.data_ptr<scalar_t>();
      const int64_t* tp = t.data_ptr<int64_t>();
      double* lp = loss.data_ptr<double>();
      double* sp = stats.data_ptr<double>();
      at::parallel_for(0, rows, grain_rows(cols), [&](int64_t begin, int64_t end) {
        kernels::row_nll_forward(zp + begin * cols, tp + begin, lp + begin, sp + 2 * begin,
                                 end - begin, cols, sigsoftmax);
      });
    });
    ctx->save_for_backward({logits, t, stats});
    ctx->saved_data["sigsoftmax"] = sigsoftmax;
    return loss.to(z.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& t = saved[1];  // (R)
    const bool sigsoftmax = ctx->saved_data["sigsoftmax"].toBool();
    const auto& g = grad_outputs[0];  // (R)
    if (torch::GradMode::is_enabled()) {
      // create_graph: the closed form from differentiable ops.
      return {row_nll_grad_differentiable(saved[0], t, g, sigsoftmax), torch::Tensor(),
              torch::Tensor()};
    }
    const auto z = saved[0].contiguous();
    const auto scales = g.to(torch::kFloat64).contiguous();  // (R)
    const int64_t rows = z.size(0), cols = z.size(1);
    auto grad_z = torch::empty_like(z);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_row_nll_backward", [&] {
      const scalar_t* zp = z.data_ptr<scalar_t>();
      const int64_t* tp = t.data_ptr<int64_t>();
      const double* sp = saved[2].data_ptr<double>();
      const double* cp = scales.data_ptr<double>();
      scalar_t* gp = grad_z.data_ptr<scalar_t>();
      at::parallel_for(0, rows, grain_rows(cols), [&](int64_t begin, int64_t end) {
        kernels::row_nll_backward(zp + begin * cols, tp + begin, sp + 2 * begin, cp + begin,
                                  gp + begin * cols, end - begin, cols, sigsoftmax);
      });
    });
    return {grad_z, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor row_nll_grad_differentiable(const torch::Tensor& z, const torch::Tensor& targets,
                                          const torch::Tensor& g, bool sigsoftmax) {
  const auto w = sigsoftmax ? z + torch::log_sigmoid(z) : z;  // (R, M)
  const auto onehot = torch::zeros_like(z).scatter(/*dim=*/1, targets.unsqueeze(1), 1.0);
  auto grad = g.unsqueeze(1) * (torch::softmax(w, /*dim=*/-1) - onehot);
  if (sigsoftmax) grad = grad * (2.0 - torch::sigmoid(z));
  return grad;
}

torch::Tensor fused_row_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                            bool sigsoftmax) {
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "fused_row_nll: logits ", logits.sizes(), " and targets ", targets.sizes(),
              " must be (R, M) and (R)");
  TORCH_CHECK(kernel_takes(logits),
              "fused_row_nll: needs CPU float32/float64 logits, "
              "got ",
              logits.scalar_type(), " on ", logits.device());
  if (targets.numel() > 0) {
    const auto lo = targets.min().item<int64_t>(), hi = targets.max().item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < logits.size(1), "fused_row_nll: targets must lie in [0, ",
                logits.size(1), "), got [", lo, ", ", hi, "]");
  }
  return RowNllFn::apply(logits, targets, sigsoftmax);
}

void set_fused_row_nll_enabled(bool enabled) { fused_enabled = enabled; }

bool fused_row_nll_supports(const torch::Tensor& logits) {
  return fused_enabled && kernel_takes(logits);
}

}  // namespace sb::heads
