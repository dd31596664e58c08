#include "trainers/lm/fused_lstm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sb::lm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// tanh: float64 by the library; float32 as 1 - 2 / (e^{2x} + 1), one expf (glibc's tanhf costs
// several): its absolute error stays within a few float32 ulps of 1 (the cancellation near 0
// costs relative, not absolute, accuracy, and the gates use it additively), and e^{2x} = inf or
// 0 gives +-1 exactly.
inline double tanh_of(double x) { return std::tanh(x); }
inline float tanh_of(float x) { return 1.0f - 2.0f / (std::exp(2.0f * x) + 1.0f); }

// Rows of `batch` per parallel task: ~4096 gate values each, so small layers stay on one thread.
int64_t grain_of(int64_t hidden) { return std::max<int64_t>(1, 4096 / (4 * hidden)); }

// One step's gates in place: a (B, 4H) pre-activations -> activations (i, f, g, o); then
// c (B, H) from c_prev, and h (B, H).
template <class T>
void gates_forward(T* a, const T* c_prev, T* c, T* h, int64_t batch, int64_t hidden) {
  at::parallel_for(0, batch, grain_of(hidden), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      T* ab = a + b * 4 * hidden;
      T *gi = ab, *gf = ab + hidden, *gg = ab + 2 * hidden, *go = ab + 3 * hidden;
      const T* cp = c_prev + b * hidden;
      T* cb = c + b * hidden;
      T* hb = h + b * hidden;
      for (int64_t j = 0; j < hidden; ++j) {
        gi[j] = sigmoid(gi[j]);
        gf[j] = sigmoid(gf[j]);
        gg[j] = tanh_of(gg[j]);
        go[j] = sigmoid(go[j]);
        cb[j] = gf[j] * cp[j] + gi[j] * gg[j];
        hb[j] = go[j] * tanh_of(cb[j]);
      }
    }
  });
}

// One step backward: activations act (B, 4H), c_prev and c (B, H); dh (B, H) the gradient of
// h_t in all; dc (B, H) in: the gradient reaching c_t from step t + 1, out: the one reaching
// c_{t-1}. Writes da (B, 4H), the pre-activations' gradient.
template <class T>
void gates_backward(const T* act, const T* c_prev, const T* c, const T* dh, T* dc, T* da,
                    int64_t batch, int64_t hidden) {
  at::parallel_for(0, batch, grain_of(hidden), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const T* ab = act + b * 4 * hidden;
      const T *gi = ab, *gf = ab + hidden, *gg = ab + 2 * hidden, *go = ab + 3 * hidden;
      T* db = da + b * 4 * hidden;
      T *di = db, *df = db + hidden, *dg = db + 2 * hidden, *dout = db + 3 * hidden;
      const T* cp = c_prev + b * hidden;
      const T* cb = c + b * hidden;
      const T* dhb = dh + b * hidden;
      T* dcb = dc + b * hidden;
      for (int64_t j = 0; j < hidden; ++j) {
        const T tc = tanh_of(cb[j]);
        const T dcj = dcb[j] + dhb[j] * go[j] * (T(1) - tc * tc);
        dout[j] = dhb[j] * tc * go[j] * (T(1) - go[j]);
        di[j] = dcj * gg[j] * gi[j] * (T(1) - gi[j]);
        dg[j] = dcj * gi[j] * (T(1) - gg[j] * gg[j]);
        df[j] = dcj * cp[j] * gf[j] * (T(1) - gf[j]);
        dcb[j] = dcj * gf[j];
      }
    }
  });
}

class FusedLstmFn : public torch::autograd::Function<FusedLstmFn> {
 public:
  static tensor_list forward(AutogradContext* ctx, const torch::Tensor& input,
                             const torch::Tensor& h0, const torch::Tensor& c0,
                             const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                             const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
    const int64_t steps = input.size(0), batch = input.size(1), in = input.size(2);
    const int64_t hidden = w_hh.size(1);
    const auto x = input.contiguous();
    // acts (T, B, 4H): the input projection of every step at once, then each step's activations.
    auto acts = torch::addmm(b_ih + b_hh, x.view({steps * batch, in}), w_ih.t())
                    .view({steps, batch, 4 * hidden});
    auto cells = torch::empty({steps + 1, batch, hidden}, input.options());  // c_0 .. c_T
    auto output = torch::empty({steps, batch, hidden}, input.options());     // h_1 .. h_T
    cells[0].copy_(c0.view({batch, hidden}));
    const auto w_hh_t = w_hh.t();
    auto h_prev = h0.view({batch, hidden}).contiguous();
    for (int64_t t = 0; t < steps; ++t) {
      auto a = acts[t];
      a.addmm_(h_prev, w_hh_t);  // (B, 4H) += h_{t-1} W_hh^T
      auto c_t = cells[t + 1];
      auto h_t = output[t];
      AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "fused_lstm_forward", [&] {
        gates_forward(a.data_ptr<scalar_t>(), cells[t].data_ptr<scalar_t>(),
                      c_t.data_ptr<scalar_t>(), h_t.data_ptr<scalar_t>(), batch, hidden);
      });
      h_prev = h_t;
    }
    ctx->save_for_backward({x, h0, w_ih, w_hh, acts, cells, output});
    return {output, output[steps - 1].unsqueeze(0).clone(), cells[steps].unsqueeze(0).clone()};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    // internal: the trainers take first derivatives only (no create_graph anywhere in them).
    if (torch::GradMode::is_enabled())
      throw std::logic_error("fused_lstm: no double backward (create_graph); use at::lstm");
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &h0 = saved[1], &w_ih = saved[2], &w_hh = saved[3];
    const auto &acts = saved[4], &cells = saved[5], &output = saved[6];
    const int64_t steps = x.size(0), batch = x.size(1), in = x.size(2), hidden = w_hh.size(1);
    const auto opts = x.options();
    auto grad_out =
        grads[0].defined() ? grads[0].contiguous() : torch::zeros({steps, batch, hidden}, opts);
    auto dh_next = grads[1].defined() ? grads[1].view({batch, hidden}).clone()
                                      : torch::zeros({batch, hidden}, opts);
    auto dc = grads[2].defined() ? grads[2].view({batch, hidden}).clone()
                                 : torch::zeros({batch, hidden}, opts);
    auto da = torch::empty({steps, batch, 4 * hidden}, opts);
    auto dh = torch::empty({batch, hidden}, opts);
    for (int64_t t = steps - 1; t >= 0; --t) {
      torch::add_out(dh, grad_out[t], dh_next);  // dh_t: from the output and from step t + 1
      auto da_t = da[t];
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_lstm_backward", [&] {
        gates_backward(acts[t].data_ptr<scalar_t>(), cells[t].data_ptr<scalar_t>(),
                       cells[t + 1].data_ptr<scalar_t>(), dh.data_ptr<scalar_t>(),
                       dc.data_ptr<scalar_t>(), da_t.data_ptr<scalar_t>(), batch, hidden);
      });
      torch::mm_out(dh_next, da_t, w_hh);  // dh_{t-1} = da_t W_hh: (B, 4H) x (4H, H)
    }
    const auto da_rows = da.view({steps * batch, 4 * hidden});
    // [h_0 .. h_{T-1}] (T B, H): the recurrent products' left operands.
    const auto h_prev = torch::cat({h0.view({1, batch, hidden}), output.narrow(0, 0, steps - 1)})
                            .view({steps * batch, hidden});
    auto d_w_hh = torch::mm(da_rows.t(), h_prev);                       // (4H, H)
    auto d_w_ih = torch::mm(da_rows.t(), x.view({steps * batch, in}));  // (4H, I)
    auto d_x = torch::mm(da_rows, w_ih).view({steps, batch, in});       // (T, B, I)
    auto d_b = da_rows.sum(/*dim=*/0);                                  // (4H)
    return {d_x,
            dh_next.view({1, batch, hidden}),
            dc.view({1, batch, hidden}),
            d_w_ih,
            d_w_hh,
            d_b,
            d_b.clone()};
  }
};

}  // namespace

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> fused_lstm(
    const torch::Tensor& input, const torch::Tensor& h0, const torch::Tensor& c0,
    const torch::Tensor& w_ih, const torch::Tensor& w_hh, const torch::Tensor& b_ih,
    const torch::Tensor& b_hh) {
  const int64_t hidden = w_hh.size(1);
  if (input.dim() != 3 || input.size(0) < 1 || !input.device().is_cpu() ||
      w_hh.size(0) != 4 * hidden || w_ih.size(0) != 4 * hidden || w_ih.size(1) != input.size(2) ||
      h0.numel() != input.size(1) * hidden || c0.numel() != h0.numel())
    // internal: WeightDropLstm passes its own parameters and AwdLstm's (T, B, size) activations
    // on the CPU (it calls fused_lstm only there); sizes are validated with the config.
    throw std::logic_error(
        "fused_lstm: shapes or device do not match at::lstm's one layer: input " +
        c10::str(input.sizes()) + ", w_ih " + c10::str(w_ih.sizes()) + ", w_hh " +
        c10::str(w_hh.sizes()));
  auto out = FusedLstmFn::apply(input, h0, c0, w_ih, w_hh.contiguous(), b_ih, b_hh);
  return {out[0], out[1], out[2]};
}

}  // namespace sb::lm
