#pragma once
// Shared by the heads tests: the list of parameter-free heads, reference formulas written
// independently of the library (naive float64 definitions), and central finite differences.

#include <functional>
#include <vector>

#include <torch/torch.h>

#include "common/head_spec.h"

namespace sb::test {

inline torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kFloat64); }

/// Every head that log_output() takes without a module (all but mos/moss), k small enough for M>=8.
inline std::vector<HeadSpec> parameter_free_specs() {
  std::vector<HeadSpec> specs;
  for (const auto& name : head_names()) {
    const auto kind = head_kind_from_name(name);
    if (is_mixture(kind)) continue;
    auto spec = HeadSpec::of(kind);
    spec.k = 5;
    specs.push_back(spec);
  }
  return specs;
}

/// Heads whose g is increasing, so argmax f == argmax z.
inline bool monotone(HeadKind kind) {
  return kind == HeadKind::softmax || kind == HeadKind::sigsoftmax || kind == HeadKind::sigmoid ||
         kind == HeadKind::relu || kind == HeadKind::sparse;
}

/// f(z) from the papers' definitions, naively (no stabilisation) in float64: valid for |z| < ~30.
inline torch::Tensor naive_probabilities(const HeadSpec& spec, const torch::Tensor& z) {
  torch::Tensor g;
  switch (spec.kind) {
    case HeadKind::softmax:
      g = z.exp();
      break;
    case HeadKind::sigsoftmax:
      g = z.exp() * z.sigmoid();
      break;
    case HeadKind::relu:
      g = z.clamp_min(0) + spec.eps;
      break;
    case HeadKind::sigmoid:
      g = z.sigmoid();
      break;
    case HeadKind::softmax_abs:
      g = z.abs().exp();
      break;
    case HeadKind::spherical:
      g = z * z + spec.eps;
      break;
    case HeadKind::taylor:
      g = 1 + z + z * z / 2;
      break;
    case HeadKind::sparse: {
      const auto kth = std::get<0>(z.topk(spec.k, -1)).select(-1, spec.k - 1).unsqueeze(-1);
      g = z.exp() * (z >= kth).to(z.dtype());
      break;
    }
    default:
      throw std::logic_error("naive_probabilities: mixture heads need a module");
  }
  return g / g.sum(-1, true);
}

/// Central differences of the scalar function f at x (float64): (f(x + h e_i) - f(x - h e_i)) / 2h.
inline torch::Tensor finite_difference_grad(const std::function<double(const torch::Tensor&)>& f,
                                            const torch::Tensor& x, double h = 1e-6) {
  auto grad = torch::zeros_like(x);
  auto flat = x.detach().clone().reshape(-1);
  auto g = grad.view(-1);
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double xi = flat[i].item<double>();
    flat[i] = xi + h;
    const double up = f(flat.view(x.sizes()));
    flat[i] = xi - h;
    const double down = f(flat.view(x.sizes()));
    flat[i] = xi;
    g[i] = (up - down) / (2 * h);
  }
  return grad;
}

inline double max_abs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

}  // namespace sb::test
