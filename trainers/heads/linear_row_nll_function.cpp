#include "trainers/heads/linear_row_nll_function.h"

#include <ATen/Parallel.h>

#include "trainers/heads/kernels/row_nll_dispatch.h"
#include "trainers/heads/row_nll_function.h"

namespace sb::heads {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

/// Whether `bias` is one: LibTorch 1.13's Function::apply refuses an undefined tensor input, so
/// "no bias" travels through the node as an empty (0) tensor.
bool has_bias(const torch::Tensor& bias) { return bias.defined() && bias.numel() > 0; }

/// x W^T + b, (R, M), contiguous.
torch::Tensor decoder_logits(const torch::Tensor& x, const torch::Tensor& weight,
                             const torch::Tensor& bias) {
  return has_bias(bias) ? torch::addmm(bias, x, weight.t()) : torch::mm(x, weight.t());
}

class LinearRowNllFn : public torch::autograd::Function<LinearRowNllFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& targets, bool sigsoftmax) {
    auto q = decoder_logits(x, weight, bias).contiguous();  // (R, M): z, then Q in place
    const auto t = targets.to(torch::kLong).contiguous();   // (R)
    const int64_t rows = q.size(0), cols = q.size(1);
    auto loss = torch::empty({rows}, torch::TensorOptions().dtype(torch::kFloat64));  // (R)
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_linear_row_nll", [&] {
      scalar_t* qp = q.data_ptr<scalar_t>();
      const int64_t* tp = t.data_ptr<int64_t>();
      double* lp = loss.data_ptr<double>();
      at::parallel_for(0, rows, kernels::grain_rows(cols), [&](int64_t begin, int64_t end) {
        kernels::row_nll_forward_grad(qp + begin * cols, tp + begin, lp + begin, end - begin, cols,
                                      sigsoftmax);
      });
    });
    ctx->save_for_backward({x, weight, bias, q, t});
    ctx->saved_data["sigsoftmax"] = sigsoftmax;
    return loss.to(x.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1], &b = saved[2], &q = saved[3], &t = saved[4];
    const auto g = grad_outputs[0].to(x.scalar_type()).unsqueeze(1);  // (R, 1)
    if (torch::GradMode::is_enabled()) {  // create_graph: recompute z, differentiable
      const auto gz = row_nll_grad_differentiable(decoder_logits(x, w, b), t, g.squeeze(1),
                                                  ctx->saved_data["sigsoftmax"].toBool());
      return {gz.mm(w), gz.t().mm(x), has_bias(b) ? gz.sum(/*dim=*/0) : torch::Tensor(),
              torch::Tensor(), torch::Tensor()};
    }
    torch::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) dx = q.mm(w).mul_(g);  // diag(g) Q W: (R, d)
    const bool need_w = ctx->needs_input_grad(1), need_b = has_bias(b) && ctx->needs_input_grad(2);
    if (need_w || need_b) {
      const int64_t d = x.size(1);
      const auto rhs = need_b ? torch::cat({x * g, g}, /*dim=*/1) : x * g;  // (R, d [+ 1])
      const auto both = q.t().mm(rhs);                                      // (M, d [+ 1])
      if (need_w) dw = need_b ? both.narrow(/*dim=*/1, 0, d) : both;
      if (need_b) db = both.select(/*dim=*/1, d);
    }
    return {dx, dw, db, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_linear_row_nll(const torch::Tensor& x, const torch::Tensor& weight,
                                   const torch::Tensor& bias, const torch::Tensor& targets,
                                   bool sigsoftmax) {
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && weight.size(1) == x.size(1),
              "fused_linear_row_nll: x ", x.sizes(), " and weight ", weight.sizes(),
              " must be (R, d) and (M, d)");
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
              "fused_linear_row_nll: bias ", bias.sizes(), " must be (", weight.size(0), ")");
  TORCH_CHECK(fused_row_nll_supports(x), "fused_linear_row_nll: needs CPU float32/float64 x, got ",
              x.scalar_type(), " on ", x.device());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == x.size(0), "fused_linear_row_nll: targets ",
              targets.sizes(), " must be (", x.size(0), ")");
  const bool wants_grad =
      torch::GradMode::is_enabled() &&
      (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (!wants_grad) return fused_row_nll(decoder_logits(x, weight, bias), targets, sigsoftmax);
  if (targets.numel() > 0) {
    const auto lo = targets.min().item<int64_t>(), hi = targets.max().item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < weight.size(0), "fused_linear_row_nll: targets must lie in [0, ",
                weight.size(0), "), got [", lo, ", ", hi, "]");
  }
  const auto b = bias.defined() ? bias : torch::empty({0}, x.options());  // (M) or (0)
  return LinearRowNllFn::apply(x, weight, b, targets, sigsoftmax);
}

}  // namespace sb::heads
