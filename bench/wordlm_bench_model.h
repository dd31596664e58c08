#pragma once
// The model and training settings of the LM speed benchmark (bench/bench_wordlm.cpp), mirrored in
// PyTorch by bench/wordlm_reference.py (keep the two in step) and checked against it, step by
// step from the same weights, by tests/fixtures/wordlm_parity.cpp +
// tests/trainers/lm/test_reference_parity.py. AWD-LSTM (trainers/lm/model.h): tied 200-dim
// embedding / decoder with bias, 2 LSTM layers of 200 units (the last one emsize wide, so a
// mixture's latent layer reads 200 units too); locked dropout on the word vectors, between the
// layers, on the output and on mixture contexts; no embedding dropout, no weight drop. Step
// (trainers/lm/train_step.h): head loss + AR 2 + TAR 1, clip 0.25, SGD lr 20 with weight
// decay 1.2e-6. Batch 20, BPTT 35 fixed.

#include <cstdint>
#include <string>

#include "trainers/lm/model.h"

namespace sb::bench {

constexpr int64_t kEmsize = 200, kNhid = 200, kLayers = 2, kBatch = 20, kBptt = 35;
constexpr double kDropout = 0.2, kLr = 20, kWdecay = 1.2e-6, kClip = 0.25;
constexpr double kAlpha = 2, kBeta = 1;
/// K of the mixtures: trainers/configs/ptb_cpu.toml trains mos:K=2 and moss:K=2.
constexpr int64_t kExperts = 2;

/// The benchmark's heads are softmax, sigsoftmax, mos and moss; true for the last two.
inline bool is_mixture(const std::string& head) { return head == "mos" || head == "moss"; }

/// The adaptive heads' cutoffs in the benchmark at WikiText-2's vocabulary (M = 33278): a head of
/// 2000 words and tails [2000, 10000), [10000, M).
inline const char* kAdaptiveCutoffs = "2000,10000";

/// "mos" / "moss" with K experts, "adaptive" / "adaptive_sigsoftmax" with `cutoffs`, or a single
/// head by name.
inline HeadSpec bench_head_spec(const std::string& head, int64_t experts,
                                const std::string& cutoffs = kAdaptiveCutoffs) {
  if (is_mixture(head)) return HeadSpec::parse(head + ":K=" + std::to_string(experts));
  if (head == "adaptive" || head == "adaptive_sigsoftmax")
    return HeadSpec::parse(head + ":cutoffs=" + cutoffs);
  return HeadSpec::parse(head);
}

/// The benchmark's AWD-LSTM for `head` over a vocabulary of vocab_size words; dropout: the
/// probability of every locked dropout (0 = a deterministic forward); emsize (= d) and nhid other
/// than 200: our side only (the reference is fixed at 200), e.g. the cpu profile's model for
/// bench/bench_mixture_speed.sh.
inline lm::AwdLstm make_bench_model(const std::string& head, int64_t experts, int64_t vocab_size,
                                    double dropout = kDropout, int64_t emsize = kEmsize,
                                    int64_t nhid = kNhid,
                                    const std::string& cutoffs = kAdaptiveCutoffs,
                                    bool fused_lstm = false) {
  return lm::AwdLstm(lm::AwdLstmOptions(vocab_size, bench_head_spec(head, experts, cutoffs))
                         .emsize(emsize)
                         .nhid(nhid)
                         .nhidlast(emsize)
                         .nlayers(kLayers)
                         .dropout(dropout)
                         .dropouth(dropout)
                         .dropouti(dropout)
                         .dropoute(0)
                         .wdrop(0)
                         .dropoutl(dropout)
                         .fused_lstm(fused_lstm));
}

}  // namespace sb::bench
