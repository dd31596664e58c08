// The window of one full pass or check (sketch.h, "Bounds" and "Rounding"; sketch_parts.h).

#include <algorithm>
#include <cmath>

#include "analysis/inertia.h"
#include "analysis/residual_power.h"
#include "analysis/sketch_parts.h"
#include "analysis/streamed_qr.h"

namespace sb::analysis::sketch_detail {
namespace {

/// Each Ritz value's bracket from the residual bound e = w.residual. The orthogonal split
/// (sketch.h, "Upper"): sigma_i^2 <= sigma_i(A Q^)^2 + ||A P||^2, with sigma_i(A Q^) <= (s_i +
/// e_R + e_Z) / sqrt(1 - eta) and ||A P|| <= e + eta sigma_1; or Weyl, s_i + e_R + e_Z scaled by
/// ||Q|| plus e, where that is lower.
void set_brackets(Window& w, double eta) {
  const double q_norm = q_norm_bound(eta);
  const double q_inv = q_inverse_bound(eta);
  const double sigma1_upper = (w.sigma[0] + w.value_error) * q_norm + w.residual;
  const double split = w.residual + eta * sigma1_upper;
  for (size_t i = 0; i < w.sigma.size(); ++i) {
    w.lower[i] = std::max(w.sigma[i] - w.value_error, 0.0) / q_norm;
    const double ritz_upper = (w.sigma[i] + w.value_error);
    w.upper[i] = std::min(ritz_upper * q_norm + w.residual, std::hypot(ritz_upper * q_inv, split));
  }
}

/// tol's bracket and the count's window from the brackets; nr = 0.5 sqrt(T + M + 1) eps.
void count_window(Window& w, double nr, int64_t rows, int64_t cols, int64_t k) {
  // Where the orthogonal split sets the upper end, the bracket can be narrower than e itself:
  // then no part of it is rounding (reported as gram_error, which is never negative).
  w.rounding = std::max(w.upper[0] - w.residual - w.lower[0], 0.0);
  w.tol = nr * w.sigma[0];
  w.tol_lo = nr * w.lower[0];
  w.tol_hi = nr * w.upper[0];
  auto count = [](const std::vector<double>& v, double t) {
    return static_cast<int64_t>(std::count_if(v.begin(), v.end(), [t](double x) { return x > t; }));
  };
  w.rank = count(w.sigma, w.tol);
  w.rank_min = count(w.lower, w.tol_hi);
  w.rank_max = count(w.upper, w.tol_lo);
  if (w.residual >= w.tol_lo) w.rank_max += std::min(rows, cols) - k;
}

}  // namespace

Window bracket(const PassSums& s, const std::vector<double>& probe_norm,
               const std::vector<double>& w_norm, const std::vector<double>& w_err, int64_t rows,
               int64_t cols, int64_t k, double eta, double frobenius, double eps) {
  Window w;
  const double c = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps;
  // The Ritz values: sigma_i(R) = sigma_i(fl(A Q) + dZ) (streamed_qr.h), each moved by at most
  // e_R = f (1 + f) ||fl(AQ)||_F from fl(AQ)'s and by dgesvd's estimated error; fl(AQ) is within
  // e_Z of A Q.
  const std::vector<double> ritz = singular_values_descending(s.r, k);
  const double z_frobenius = std::sqrt(std::max(s.z_frobenius_sq, 0.0) *
                                       (1 + gamma_float64(static_cast<double>(rows * k))));
  const double e_r = s.qr_factor * (1 + s.qr_factor) * z_frobenius +
                     svd_error_estimate(k, z_frobenius * (1 + s.qr_factor));
  const double e_z =
      gamma_float64(static_cast<double>(cols)) * frobenius * std::sqrt(double(k) * (1 + eta));
  w.value_error = e_r + e_z;
  // e: HMT lemma 4.1 on the probes, each observed norm widened by its rounding.
  double max_probe = 0, max_rounding = 0;
  for (size_t i = 0; i < probe_norm.size(); ++i) {
    const double observed =
        std::sqrt(std::max(s.probe_sq[i], 0.0) * (1 + gamma_float64(static_cast<double>(rows))));
    const double rounding =
        gamma_float64(static_cast<double>(cols)) * frobenius * w_norm[i] + frobenius * w_err[i];
    max_probe = std::max(max_probe, observed + rounding);
    max_rounding = std::max(max_rounding, rounding);
  }
  const double factor = probe_factor(static_cast<int>(probe_norm.size()));
  w.residual = factor * max_probe;
  w.residual_floor = factor * max_rounding;
  w.sigma = ritz;
  w.sigma.resize(static_cast<size_t>(k));
  w.lower.resize(w.sigma.size());
  w.upper.resize(w.sigma.size());
  set_brackets(w, eta);
  count_window(w, c, rows, cols, k);
  return w;
}

void narrow_by_residual(Window& w, double e, double eta, int64_t rows, int64_t cols, int64_t k,
                        double eps) {
  if (!(e < w.residual) || w.sigma.empty()) return;
  w.residual = e;
  w.residual_count = 0;
  set_brackets(w, eta);
  count_window(w, 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps, rows, cols, k);
}

double residual_to_close(const Window& w, int64_t j, double eta) {
  if (j < 0 || j >= static_cast<int64_t>(w.sigma.size())) return 0;
  const double q_norm = q_norm_bound(eta);
  const double q_inv = q_inverse_bound(eta);
  const double ritz_upper = w.sigma[static_cast<size_t>(j)] + w.value_error;
  // Weyl: ritz_upper ||Q|| + e < tol_lo; the split: hypot(ritz_upper / sqrt(1 - eta), e + eta
  // sigma_1) < tol_lo, with sigma_1 <= (s_1 + e_R + e_Z) ||Q|| + tol_lo for any e below tol_lo.
  const double weyl = w.tol_lo - ritz_upper * q_norm;
  const double side = ritz_upper * q_inv;
  const double sigma1_upper = (w.sigma[0] + w.value_error) * q_norm + w.tol_lo;
  const double split =
      side < w.tol_lo ? std::sqrt((w.tol_lo - side) * (w.tol_lo + side)) - eta * sigma1_upper : 0.0;
  return std::max({weyl, split, 0.0});
}

}  // namespace sb::analysis::sketch_detail
