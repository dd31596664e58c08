#include "trainers/heads/sigmoid_family_function.h"

#include <ATen/Parallel.h>

#include "trainers/heads/check.h"
#include "trainers/heads/kernels/sigmoid_family_kernel.h"

namespace sb::heads {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

using kernels::grain_rows;

class SigmoidFamilyFn : public torch::autograd::Function<SigmoidFamilyFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, bool sigsoftmax) {
    const auto z = logits.contiguous();  // (N, M)
    auto out = torch::empty_like(z);     // (N, M)
    const int64_t cols = z.size(1);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_log_sigmoid_family", [&] {
      const scalar_t* zp = z.data_ptr<scalar_t>();
      scalar_t* op = out.data_ptr<scalar_t>();
      at::parallel_for(0, z.size(0), grain_rows(cols), [&](int64_t begin, int64_t end) {
        const int64_t o = begin * cols;
        kernels::sigmoid_family_forward(zp + o, op + o, end - begin, cols, sigsoftmax);
      });
    });
    // Save the input itself, not the contiguous copy: only the input carries the autograd history
    // that a double backward differentiates through.
    ctx->save_for_backward({logits, out});
    ctx->saved_data["sigsoftmax"] = sigsoftmax;
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& out = saved[1];  // (N, M)
    const bool sigsoftmax = ctx->saved_data["sigsoftmax"].toBool();
    const double a = sigsoftmax ? 1.0 : 0.0;
    const auto g = grad_outputs[0].contiguous();  // (N, M)

    if (torch::GradMode::is_enabled()) {
      // create_graph: the same closed form, differentiable (Theorem 5).
      const auto s = g.sum(/*dim=*/-1, /*keepdim=*/true);
      return {(g - out.exp() * s) * ((a + 1.0) - torch::sigmoid(saved[0])), torch::Tensor()};
    }
    const auto z = saved[0].contiguous();  // (N, M)
    auto grad_z = torch::empty_like(out);
    const int64_t cols = out.size(1);
    AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "fused_log_sigmoid_family_backward", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* op = out.data_ptr<scalar_t>();
      const scalar_t* zp = z.data_ptr<scalar_t>();
      scalar_t* gzp = grad_z.data_ptr<scalar_t>();
      at::parallel_for(0, out.size(0), grain_rows(cols), [&](int64_t begin, int64_t end) {
        const int64_t o = begin * cols;
        kernels::sigmoid_family_backward(gp + o, op + o, zp + o, gzp + o, end - begin, cols,
                                         sigsoftmax);
      });
    });
    return {grad_z, torch::Tensor()};
  }
};

class SigmoidFamilyNllFn : public torch::autograd::Function<SigmoidFamilyNllFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, bool sigsoftmax) {
    const auto z = logits.contiguous();                    // (N, M)
    const auto t = targets.to(torch::kLong).contiguous();  // (N,)
    const int64_t rows = z.size(0), cols = z.size(1);
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    auto loss = torch::empty({rows}, f64);      // (N,)
    auto stats = torch::empty({rows, 2}, f64);  // (N, 2): row max, log-normaliser
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_sigmoid_family_nll", [&] {
      const scalar_t* zp = z.data_ptr<scalar_t>();
      const int64_t* tp = t.data_ptr<int64_t>();
      double* lp = loss.data_ptr<double>();
      double* sp = stats.data_ptr<double>();
      at::parallel_for(0, rows, grain_rows(cols), [&](int64_t begin, int64_t end) {
        kernels::sigmoid_family_nll_forward(zp + begin * cols, tp + begin, lp + begin,
                                            sp + 2 * begin, end - begin, cols, sigsoftmax);
      });
    });
    ctx->save_for_backward({logits, t, stats});
    ctx->saved_data["sigsoftmax"] = sigsoftmax;
    return loss.mean().to(z.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& t = saved[1];  // (N,)
    const bool sigsoftmax = ctx->saved_data["sigsoftmax"].toBool();
    const int64_t rows = saved[0].size(0), cols = saved[0].size(1);
    const auto& g = grad_outputs[0];  // 0-dim

    if (torch::GradMode::is_enabled()) {
      // create_graph: the closed form from differentiable ops (Theorem 5).
      const auto& z = saved[0];
      const double a = sigsoftmax ? 1.0 : 0.0;
      const auto w = sigsoftmax ? z + torch::log_sigmoid(z) : torch::log_sigmoid(z);
      const auto f = torch::softmax(w, /*dim=*/-1);
      const auto onehot = torch::zeros_like(z).scatter(/*dim=*/1, t.unsqueeze(1), 1.0);
      return {g / rows * (f - onehot) * ((a + 1.0) - torch::sigmoid(z)), torch::Tensor(),
              torch::Tensor()};
    }
    const auto z = saved[0].contiguous();
    const double scale = g.item<double>() / static_cast<double>(rows);
    auto grad_z = torch::empty_like(z);
    AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "fused_sigmoid_family_nll_backward", [&] {
      const scalar_t* zp = z.data_ptr<scalar_t>();
      const int64_t* tp = t.data_ptr<int64_t>();
      const double* sp = saved[2].data_ptr<double>();
      scalar_t* gp = grad_z.data_ptr<scalar_t>();
      at::parallel_for(0, rows, grain_rows(cols), [&](int64_t begin, int64_t end) {
        kernels::sigmoid_family_nll_backward(zp + begin * cols, tp + begin, sp + 2 * begin, scale,
                                             gp + begin * cols, end - begin, cols, sigsoftmax);
      });
    });
    return {grad_z, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor fused_sigmoid_family_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                                       bool sigsoftmax) {
  return SigmoidFamilyNllFn::apply(logits, targets, sigsoftmax);
}

bool fused_sigmoid_family_supports(const torch::Tensor& logits) {
  return logits.device().is_cpu() &&
         (logits.scalar_type() == torch::kFloat || logits.scalar_type() == torch::kDouble);
}

torch::Tensor fused_log_sigmoid_family(const torch::Tensor& logits, bool sigsoftmax) {
  return SigmoidFamilyFn::apply(logits, sigsoftmax);
}

torch::Tensor sigmoid_family_log_output(const torch::Tensor& logits, bool sigsoftmax,
                                        ComposedLogOutput composed, const char* name) {
  check_logits(logits, name);
  if (fused_sigmoid_family_supports(logits)) return fused_log_sigmoid_family(logits, sigsoftmax);
  return composed(logits);
}

torch::Tensor sigmoid_family_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                                      bool sigsoftmax, ComposedLogOutput composed,
                                      const char* name) {
  check_logits(logits, name);
  check_targets(targets, logits, name);
  if (fused_sigmoid_family_supports(logits))
    return fused_sigmoid_family_nll(logits, targets, sigsoftmax);
  return torch::nll_loss(composed(logits), targets);
}

}  // namespace sb::heads
