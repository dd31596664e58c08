#pragma once
// The one spelling of every output activation ("head"), shared by the heads library, the trainers
// and the analysis. LibTorch-free on purpose: the analysis is plain linear algebra over a file and
// must not depend on LibTorch (docs/design.md), yet it needs to know which heads Theorem 2 bounds.

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

  /// Parses `name[:key=value,...]`; throws std::invalid_argument naming the valid names/keys.
  static HeadSpec parse(const std::string& text);
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
/// classes than there are); throws std::invalid_argument "head = "sparse:k=20": k = 20 exceeds
/// the M = 10 <what>; set k <= 10".
void check_head_fits(const HeadSpec& spec, int64_t M, const std::string& what);

/// Checks that the head fits M output classes (sparse: k <= M, or the top-k would ask for more
/// classes than there are); throws std::invalid_argument "head = "sparse:k=20": k = 20 exceeds
/// the M = 10 <what>".
void check_head_fits(const HeadSpec& spec, int64_t M, const std::string& what);

/// Registry names in declaration order: softmax, sigsoftmax, relu, ...
const std::vector<std::string>& head_names();
std::string head_name(HeadKind kind);
/// Throws std::invalid_argument listing the valid names when `name` is unknown.
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
