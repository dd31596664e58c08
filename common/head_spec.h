#pragma once
// The one spelling of every output activation ("head"), shared by the heads library, the trainers
// and the analysis. LibTorch-free on purpose: the analysis is plain linear algebra over a file and
// must not depend on LibTorch (docs/design.md), yet it needs to know which heads Theorem 2 bounds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb {

enum class HeadKind {
  softmax,      // exp(z_i) / sum exp(z)
  sigsoftmax,   // exp(z_i) sigmoid(z_i) / sum ...        (Kanai et al. 2018, Definition 1)
  relu,         // (ReLU(z_i) + eps) / sum ...             (supplementary eq. 15)
  sigmoid,      // sigmoid(z_i) / sum sigmoid(z)           (supplementary B.2)
  softmax_abs,  // softmax(|z|)                            (de Brebisson & Vincent 2016, control)
  spherical,    // (z_i^2 + eps) / sum ...                 (de Brebisson & Vincent 2016)
  taylor,       // (1 + z_i + z_i^2 / 2) / sum ...         (de Brebisson & Vincent 2016)
  sparse,       // softmax over the top-k logits, 0 elsewhere (Sun et al. 2021, eq. 4)
  mos,          // mixture of K softmaxes                  (Yang et al. 2018)
  moss,         // mixture of K sigsoftmaxes, sigsoftmax prior (Kanai et al. 2018, eq. 19)
  adaptive,     // adaptive softmax: a head cluster + frequency-sorted tail clusters behind
                // projections of decreasing size (Grave et al. 2017)
  adaptive_sigsoftmax,  // the same with every softmax replaced by sigsoftmax (Kanai et al. 2018,
                        // supplementary E)
};

/// A head and its hyperparameters. Written as `name[:key=value[,key=value]]`, e.g. "softmax",
/// "sparse:k=20", "mos:K=15", "spherical:eps=0.0198". The name alone is the registry name used in
/// configs, CLIs, HDF5 attributes, tables and plots.
struct HeadSpec {
  HeadKind kind = HeadKind::softmax;
  int64_t k = 20;               ///< sparse: how many logits keep mass; 1 <= k <= M
  int64_t experts = 15;         ///< mos/moss: number of mixture components K (paper: 15)
  double eps = 1e-8;            ///< relu: additive floor (eq. 15); spherical: eps (> 0)
  bool learnable_bias = false;  ///< sigsoftmax: learnable scalar b of Theorem 4 (paper: off)
  /// adaptive heads: the cluster boundaries c_1 < ... < c_n < M over the frequency-sorted
  /// vocabulary: the head cluster holds words [0, c_1), tail cluster i words [c_i, c_(i+1))
  /// (c_(n+1) = M). Written `cutoffs=2000,6000`.
  std::vector<int64_t> cutoffs{2000, 6000};
  /// adaptive heads: tail cluster i sits behind a projection to d / div^i dimensions (at least 1;
  /// Grave et al. 2017's default 4).
  double div = 4.0;

  /// Parses `name[:key=value,...]`; throws sb::OptionError (option "head") naming the valid
  /// names/keys.
  static HeadSpec parse(const std::string& text);
  /// How many times parse() has run in this process: a test checks that a trainer run parses its
  /// head once (a config holds a HeadSetting, common/head_setting.h).
  static std::size_t parse_count();
  /// The default spec of a head (its own eps default: 1e-8 for relu, 0.0198 for spherical).
  static HeadSpec of(HeadKind kind);
  /// Round-trips through parse(): the name plus the hyperparameters that apply to this head.
  std::string to_string() const;
  std::string name() const;
};

/// HeadSpec::parse for a config's `head` key: the error reads `head = "<text>": <why><hint>`.
HeadSpec parse_head_setting(const std::string& text, const std::string& hint = "");
/// The spec as part of a file name: ':', '=' and ',' become '_' ("mos:K=15" -> "mos_K_15").
std::string head_file_name(const std::string& text);

/// Checks that the head fits M output classes (sparse: k <= M, or its top-k would ask for more
/// classes than there are); throws sb::OptionError "head = "sparse:k=20": k = 20 exceeds
/// the M = 10 <what>; set k <= 10".
void check_head_fits(const HeadSpec& spec, int64_t M, const std::string& what);

/// The adaptive heads (adaptive, adaptive_sigsoftmax): a head cluster and tail clusters, with
/// parameters of their own beside the decoder's head-cluster rows.
bool is_adaptive(HeadKind kind);
inline bool is_adaptive(const HeadSpec& spec) { return is_adaptive(spec.kind); }

/// Registry names in declaration order: softmax, sigsoftmax, relu, ...
const std::vector<std::string>& head_names();
std::string head_name(HeadKind kind);
/// Throws sb::OptionError (option "head") listing the valid names when `name` is unknown.
HeadKind head_kind_from_name(const std::string& name);

/// Theorem 2 (Kanai et al. 2018) bounds only log-softmax: with a d-dimensional input space the
/// log-outputs span at most d + 1 dimensions (+1 more for a decoder bias). For every other head
/// the rank may exceed the bound (Theorem 3 for sigsoftmax; MoS by construction).
bool theorem2_bounded(HeadKind kind);

/// MoS and MoSS: K experts mixed by a prior, with their own parameters (a latent projection to K
/// contexts); a model gives them a last layer of its own size and the trainer its own lr.
bool is_mixture(HeadKind kind);
inline bool is_mixture(const HeadSpec& spec) { return is_mixture(spec.kind); }

/// The rank bound of Theorem 2 for a decoder input of size d, plus one with a decoder bias.
inline int64_t theorem2_rank_bound(int64_t d, bool bias) { return d + 1 + (bias ? 1 : 0); }

/// Heads whose log-output rank has a bound below min(M, T): softmax (Theorem 2) and the adaptive
/// softmax (its extension below). The `theorem2_bounded` fact of results and tables.
bool rank_bounded(HeadKind kind);

/// The rank bound of a head's log-output matrix for a decoder input of size d, with or without
/// a bias. `normaliser`: the rows are log-probabilities (one direction more for the head's
/// normaliser; false for logits). A bound only where rank_bounded(kind); for the other heads it
/// is the bound of their softmax counterpart that their rank is held against (sigsoftmax, the
/// mixtures, ...: Theorem 2's; adaptive_sigsoftmax: the adaptive softmax's).
///
/// softmax (Theorem 2): log p_t = W h_t + b - L(h_t) 1, L = logsumexp, so every column of the
/// M x T log-output matrix lies in span(columns of W, b, 1): d + 1 + [bias].
///
/// adaptive softmax (Grave et al. 2017), n = cutoffs.size() tail clusters. With the head
/// cluster's logits z = W_0 h + b_0 (c_1 words and n cluster entries) and tail cluster i's
/// logits U_i P_i h + b_i (P_i: d_i x d, U_i: |C_i| x d_i, b_i the words' biases),
/// L_0 = logsumexp(z) and L_i = logsumexp(U_i P_i h + b_i):
///   head word w:        log p(w) = W_0[w] h + b_0[w] - L_0(h)
///   word w in tail i:   log p(w) = (W_0[c_1 + i] + P_i^T U_i[w]) h + b_0[c_1 + i] + b_i[w]
///                                  - L_0(h) - L_i(h)
/// Every log-probability is a fixed linear function of the feature vector
/// phi(h) = (h, L_0(h), L_1(h), ..., L_n(h), 1), which has d + 1 + n + [bias] entries (the 1
/// only with a bias). So A = C Phi with C (M x (d + 1 + n + [bias])) and
/// rank A <= d + 1 + n + [bias]: one direction more than softmax per tail cluster, whatever the
/// projections' sizes d_i. It is attained when C has full column rank (generic weights, tail
/// clusters of more than one word) and the features of the T contexts are linearly independent
/// (the L_i are non-linear in h). For logits (no normalisers) the softmax count applies: d +
/// [bias]. adaptive_sigsoftmax has no bound: log sigsoftmax(z) = z + log sigmoid(z) - L adds the
/// non-linear log sigmoid of every logit (Theorem 3).
///
/// A final normalisation before the decoder (FinalNorm) changes the count through the space h
/// lives in; head_rank_bound takes it as `norm`:
///   none, rmsnorm: h = gamma * x / rms(x) spans up to d directions (RMSNorm does not centre), so
///       the bounds above hold as they are.
///   layernorm: h = gamma * (x - mean(x)) / std(x) + beta. The centred vector u = (x - mean(x)) /
///       std(x) lies in {u : sum u = 0}, a subspace of dimension d - 1, so h = diag(gamma) u + beta
///       lies in an affine subspace of dimension d - 1 whose offset beta is a constant direction.
///       The logits W h + b = W diag(gamma) u + (W beta + b) then span d - 1 directions plus one
///       constant, whatever the decoder bias: the bounds above with d - 1 in place of d and a bias
///       always present. Log-softmax: d - 1 + 1 + 1 = d + 1 (one below a biased decoder's d + 2);
///       logits: d; the adaptive softmax: d + 1 + n. (A LayerNorm without beta and a decoder
///       without bias have one fewer; the bound stays an upper bound.)
int64_t head_rank_bound(const HeadSpec& spec, int64_t d, bool bias, bool normaliser = true);

/// The model's normalisation of the decoder's input (a Transformer's final LayerNorm or RMSNorm),
/// a fact of the contract (attribute 'final_norm'; rank_analysis --final-norm) that the rank
/// bound depends on (head_rank_bound's comment derives how).
enum class FinalNorm { none, layernorm, rmsnorm };
/// "none", "layernorm", "rmsnorm".
std::string final_norm_name(FinalNorm norm);
/// Throws sb::OptionError (option "final_norm") naming the three values.
FinalNorm final_norm_from_name(const std::string& name);
/// head_rank_bound with a final normalisation (derivation above).
int64_t head_rank_bound(const HeadSpec& spec, int64_t d, bool bias, bool normaliser,
                        FinalNorm norm);

/// The whole of `text` as a finite number (std::stod over the entire string), else nullopt.
/// Shared by head options and the analysis' --eps.
std::optional<double> parse_finite_number(const std::string& text);

/// Heads whose log-output can be -inf (sparse: off the top k), which makes the rank undefined.
bool may_output_neg_inf(HeadKind kind);

/// Whether every dump of this head has a numerical rank: false for a head that may output -inf
/// (may_output_neg_inf), whose dumps rank_analysis refuses. The pipeline plans its analyse stage
/// by it (`rank_analysis --list-heads --json`).
bool rank_defined(HeadKind kind);

}  // namespace sb
