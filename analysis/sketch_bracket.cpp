// The window of one full pass or check (sketch.h, "Bounds" and "Rounding"; sketch_parts.h).

#include <algorithm>
#include <cmath>

#include "analysis/inertia.h"
#include "analysis/residual_power.h"
#include "analysis/sketch_parts.h"
#include "analysis/streamed_qr.h"

namespace sb::analysis::sketch_detail {

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
  const double q_norm = std::sqrt(1 + eta);
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
  w.sigma.resize(static_cast<size_t>(k));
  w.lower.resize(w.sigma.size());
  w.upper.resize(w.sigma.size());
  // The orthogonal split (sketch.h, "Upper"): sigma_i^2 <= sigma_i(A Q^)^2 + ||A P||^2, with
  // sigma_i(A Q^) <= (s_i + e_R + e_Z) / sqrt(1 - eta) and ||A P|| <= e + eta sigma_1.
  const double q_inv = 1 / std::sqrt(std::max(1 - eta, 0.5));
  const double sigma1_upper = (ritz[0] + w.value_error) * q_norm + w.residual;
  const double split = w.residual + eta * sigma1_upper;
  for (size_t i = 0; i < w.sigma.size(); ++i) {
    w.sigma[i] = ritz[i];
    w.lower[i] = std::max(w.sigma[i] - w.value_error, 0.0) / q_norm;
    const double ritz_upper = (w.sigma[i] + w.value_error);
    w.upper[i] = std::min(ritz_upper * q_norm + w.residual, std::hypot(ritz_upper * q_inv, split));
  }
  // Where the orthogonal split sets the upper end, the bracket can be narrower than e itself:
  // then no part of it is rounding (reported as gram_error, which is never negative).
  w.rounding = std::max(w.upper[0] - w.residual - w.lower[0], 0.0);
  w.tol = c * w.sigma[0];
  w.tol_lo = c * w.lower[0];
  w.tol_hi = c * w.upper[0];
  auto count = [](const std::vector<double>& v, double t) {
    return static_cast<int64_t>(std::count_if(v.begin(), v.end(), [t](double x) { return x > t; }));
  };
  w.rank = count(w.sigma, w.tol);
  w.rank_min = count(w.lower, w.tol_hi);
  w.rank_max = count(w.upper, w.tol_lo);
  if (w.residual >= w.tol_lo) w.rank_max += std::min(rows, cols) - k;
  return w;
}

}  // namespace sb::analysis::sketch_detail
