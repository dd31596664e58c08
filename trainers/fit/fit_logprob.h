#pragma once
// Expressiveness measured without a language model: fit a conditional distribution P*(. | c) over
// C contexts and M words with free context vectors h_c in R^d and a head's output layer, by
// full-batch optimisation to convergence, and report the converged KL(P* || P_theta) and the rank
// of the fitted log-matrix (Kanai et al. 2018, Theorems 2 and 4; Yang et al. 2018, sec. 2).
//
// Why softmax cannot reach KL 0 below a certain d. The fitted log-matrix of softmax is
// log Q = H W^T + 1 b^T - lse(.) 1^T (H: C x d, W: M x d, b: M): a rank-d matrix plus two rank-one
// terms, so rank(log Q) <= d + 2 (d + 1 without b). KL(P* || Q) = 0 needs Q = P* wherever the
// context weights are positive, i.e. log Q = log P*, impossible when rank(log P*) > d + 2. A head
// whose log-output is not a low-rank matrix plus row/column shifts (sigsoftmax, g:sigmoid,
// MoS/MoSS) has no such cap (Theorem 4; Yang et al.'s Property 2 for MoS), so its KL can fall
// below softmax's at the same d. Conversely, with d + 1 >= rank(H* W*^T) of a target built as
// softmax(H* W*^T), softmax can represent the target exactly: KL 0 is reachable (the test target
// of low_rank_target).
//
// Convergence is declared when the KL's change over the last `check_every` steps lies within
// +-(rel_tol * KL + abs_tol) after the learning rate has been halved `lr_halvings` times (each
// halving happens at the first such plateau); fit_logprob_matrix runs a second fit from another
// seed, and the two KLs are reported side by side (their disagreement is the fit's uncertainty).
// A window in which the KL rose by more than that is not a plateau but Adam's step overshooting
// a narrow valley: the learning rate halves and the count of plateaus does not move (window_step).
// Counting a rise as a plateau declared the d = 80 PTB fits converged while their KL rose by
// 1.4% to 16.5% in the last window.
// The test is on the KL (the loss minus the target's entropy), not on the loss: the loss is the
// cross-entropy, ~5 nats on PTB's bigrams, so a relative test on it let through a KL still
// falling by 1% per 1000 steps. abs_tol is the float32 loss's resolution (5 nats x 2^-24 is
// 3e-7 per evaluation): a KL near 0 plateaus at rounding, not at a relative change.
//
// Why the PTB target keeps the 1000 most frequent next words and merges the rest into one outcome
// (`words` of bigram_target; measured with fit_logprob_matrix's schedule re-implemented over
// Debian's PyTorch, softmax): over the full vocabulary (M = 10000) no optimiser converged in the
// budget: the KL has a tail of 10^4+ steps, and it goes with the rare words (merging them
// removes it, below), not with the optimiser: C = 200, d = 10: Adam 0.3124 at 4000 steps, 0.30944
// at 13000 and still falling 6e-5 per 1000; L-BFGS in float64 after 500 Adam steps the same tail,
// slower per second (0.3241 at 46 s, Adam 0.3133 at 56 s); a damped Gauss-Newton
// (Levenberg-Marquardt, conjugate gradients preconditioned by the Gauss-Newton diagonal, float64)
// 0.3148 after 40 steps (442 s), still falling 3e-4 a step; the decoder bias started at the
// target's log-marginal 0.31095 at 4000 (0.31240 from 0); an SVD start KL 2.45 (worse than random);
// C = 100 instead of 200: 0.2033 at 20000 steps, not converged. With the 1000 most frequent words
// and the rest as one outcome (M = 1001; they hold 79% of PTB's training tokens), the plateau test
// above passes: C = 200, d = 10, `fit_logprob_matrix --d 10 --heads softmax` converged in 10600
// steps, KL 0.16737, its restart 0.16782 (0.3% apart), 31 s for both on one core.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/head_spec.h"

namespace sb::fit {

/// A conditional distribution to fit: log P*(j | c) and the weight of each context.
struct Target {
  torch::Tensor log_p;   ///< (C, M) float64, every row a log-distribution (finite)
  torch::Tensor weight;  ///< (C) float64, >= 0, sum 1: the contexts' frequencies
  std::string what;      ///< a description for the report
};

/// The smoothed bigram distribution of a token stream over its `contexts` most frequent
/// previous words (ties by smaller id), weighted by their frequency as a previous word:
/// P*(w | c) = (n(c, w) + beta u(w)) / (n(c) + beta), with u the add-one unigram distribution
/// of the stream (so every entry is positive and the log-matrix finite). With 0 < words < vocab
/// the columns are the `words` most frequent words of the stream (ties by smaller id, in that
/// order) and one last column holding the rest's probability, sum_{w not kept} P*(w | c)
/// (M = words + 1; module comment: why). Throws sb::OptionError for contexts < 1 or > vocab,
/// words < 0 or beta <= 0, sb::InputError for fewer than 2 tokens or a token id outside
/// [0, vocab).
Target bigram_target(const std::vector<int64_t>& tokens, int64_t vocab, int64_t contexts,
                     double beta, int64_t words = 0);

/// softmax(scale * A B^T + c) with A (C x r), B (M x r), c (M) standard normal draws of `seed`:
/// rank(log P*) <= r + 2, exactly representable by softmax with d >= r (tests). Uniform weights.
Target low_rank_target(int64_t contexts, int64_t vocab, int64_t r, double scale, uint64_t seed);

struct FitOptions {
  HeadSpec spec;              ///< the head (softmax, sigsoftmax, sigmoid, mos:K=2, moss:K=2, ...)
  int64_t d = 32;             ///< the dimension of h_c and of the decoder's rows
  bool bias = true;           ///< a decoder bias b (M)
  uint64_t seed = 0;          ///< initialisation
  double lr = 0.02;           ///< Adam's learning rate at the start
  /// Stop here, converged or not. 60000: the PTB d = 40 softmax fit converges at 26600 steps under
  /// window_step; 20000 stopped it and its neighbours unconverged (docs/reproducing.md, the fits).
  int64_t max_steps = 60000;
  int64_t check_every = 100;  ///< the window of the convergence test
  double rel_tol = 1e-5;      ///< a plateau: the KL moved by less than rel_tol * KL + abs_tol
  double abs_tol = 1e-6;      ///< (nats) in the last window (module comment)
  int lr_halvings = 3;        ///< plateaus met by halving the learning rate before stopping
  /// Called after every window: (step, KL in nats, from the float32 loss).
  std::function<void(int64_t, double)> progress;
};

struct FitResult {
  double kl = 0;               ///< sum_c w_c KL(P*(. | c) || Q(. | c)), nats, from float64
  int64_t steps = 0;           ///< optimiser steps taken
  bool converged = false;      ///< the plateau test passed before max_steps
  double last_rel_change = 0;  ///< the last window's KL decrease over the KL
  int64_t parameters = 0;      ///< trainable parameters of the fit
  torch::Tensor log_q;         ///< (C, M) float64: the fitted log-matrix
};

/// What one window of the convergence test decides (module comment).
enum class WindowStep {
  keep,       ///< the KL fell by more than the tolerance: go on at this learning rate
  halve,      ///< a plateau before the last, or a rise: halve the learning rate
  converged,  ///< the plateau after `lr_halvings` halvings at plateaus: stop
};

/// The convergence test of one window: `decrease` is the KL at the window's start minus at its
/// end (nats, negative when it rose), `plateaus` the plateaus met so far (incremented here when
/// this window is one that halves). tol = rel_tol |kl| + abs_tol; |decrease| < tol is a plateau,
/// decrease <= -tol a rise (halve, not counted).
WindowStep window_step(double decrease, double kl, int& plateaus, const FitOptions& options);

/// Fits the target (module comment); deterministic for a seed and thread count.
FitResult fit(const Target& target, const FitOptions& options);

/// sum_c w_c sum_j P*(j | c) (log P*(j | c) - log Q(j | c)), in float64.
double weighted_kl(const Target& target, const torch::Tensor& log_q);

/// The target's weighted entropy -sum_c w_c sum_j P*(j | c) log P*(j | c), in float64: the
/// fit's loss (the weighted cross-entropy) minus this is the KL.
double weighted_entropy(const Target& target);

/// The numerical rank of a float64 matrix with the Numerical Recipes threshold
/// tol = 0.5 sqrt(m + n + 1) sigma_max eps (eps of float64), as rank_analysis uses it.
struct Rank {
  int64_t rank = 0;
  double sigma_max = 0;
  double tol = 0;
};
Rank numerical_rank(const torch::Tensor& matrix);

/// The fit_logprob_matrix binary's whole program (fit_cli.cpp: the options, the target, one fit
/// per head and d, the JSON report); trainers/fit_logprob_matrix.cpp calls it.
int fit_logprob_matrix_main(int argc, char** argv);

}  // namespace sb::fit
