#pragma once
// The two halves of one AWD-LSTM training step (Merity et al. 2018), shared by the trainer
// (trainer.cpp), the speed benchmark (bench/bench_wordlm.cpp) and the reference-parity test
// (tests/fixtures/wordlm_parity.cpp), so that all three run the same step:
//   segment_loss      forward from the detached carried state; the head's mean NLL + AR + TAR
//   (loss.backward(), by the caller)
//   clipped_sgd_step  clip the global gradient norm, then SGD with weight decay (sgd_step)
// The caller zeroes the gradients before segment_loss (model->zero_grad()).

#include <torch/torch.h>

#include <vector>

#include "trainers/lm/model.h"

namespace sb::lm {

struct SegmentLoss {
  torch::Tensor raw_loss;        ///< 0-dim: the head's mean NLL over the T * B targets
  torch::Tensor loss;            ///< 0-dim: raw_loss + AR + TAR, what backward() differentiates
  std::vector<LstmState> state;  ///< after the segment: carry it into the next one
};

/// x, y (T, B) int64 (y: x shifted by one token); state: carried from the previous segment
/// (empty = zeros), detached here (truncated BPTT). AR (alpha) reads the dropped last-layer output,
/// TAR (beta) the undropped one (Merity et al. 2018, sec. 4.6).
SegmentLoss segment_loss(AwdLstm& model, const torch::Tensor& x, const torch::Tensor& y,
                         const std::vector<LstmState>& state, double alpha, double beta);

/// After loss.backward(): torch::nn::utils::clip_grad_norm_(params, clip) when clip > 0, then
/// sgd_step(params, lr, wdecay). Returns the global gradient norm before clipping (NaN when
/// clip <= 0: not computed).
double clipped_sgd_step(const std::vector<torch::Tensor>& params, double clip, double lr,
                        double wdecay);

}  // namespace sb::lm
