#include "trainers/lm/train_step.h"

#include <limits>

#include "trainers/lm/ar_tar.h"
#include "trainers/lm/nt_asgd.h"

namespace sb::lm {

SegmentLoss segment_loss(AwdLstm& model, const torch::Tensor& x, const torch::Tensor& y,
                         const std::vector<LstmState>& state, double alpha, double beta) {
  auto out = model->forward(x, detach_state(state));  // output, raw_last: (T, B, H_last)
  SegmentLoss s;
  s.raw_loss = model->loss(out.output, y.reshape({-1}));
  s.loss = s.raw_loss + activation_regularisation(out.output, alpha) +
           temporal_activation_regularisation(out.raw_last, beta);
  s.state = std::move(out.state);
  return s;
}

double clipped_sgd_step(const std::vector<torch::Tensor>& params, double clip, double lr,
                        double wdecay) {
  double norm = std::numeric_limits<double>::quiet_NaN();
  if (clip > 0) norm = torch::nn::utils::clip_grad_norm_(params, clip);
  sgd_step(params, lr, wdecay);
  return norm;
}

}  // namespace sb::lm
