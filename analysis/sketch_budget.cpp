// The sketch's budget and checks (analysis/sketch.h): its block rows and memory model, its
// options' ranges, and its window judged against the bound. The passes are sketch.cpp's.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "analysis/block_stream.h"
#include "analysis/rank_certificate.h"
#include "analysis/residual_power.h"
#include "analysis/sketch.h"
#include "analysis/sketch_parts.h"
#include "common/errors.h"

namespace sb::analysis {

void apply_bound(RankReport& r, const SketchResult& s, int64_t bound, int64_t rows, int64_t cols) {
  r.bound = bound;
  r.bound_binding = bound < std::min(rows, cols);
  judge_window(r);
  const auto k = static_cast<int64_t>(s.lower.size());
  r.spectral_gap = std::numeric_limits<double>::quiet_NaN();
  if (bound >= 1 && bound <= k) {
    const double next = bound < k ? s.upper[static_cast<size_t>(bound)] : r.residual_bound;
    if (next > 0) r.spectral_gap = s.lower[static_cast<size_t>(bound - 1)] / next;
  }
}

int64_t sketch_block_rows(int64_t cols, int64_t block_rows) {
  const int64_t fit = (int64_t{256} << 20) / (8 * std::max<int64_t>(cols, 1));
  return std::clamp<int64_t>(fit, 1, block_rows > 0 ? block_rows : 4096);
}

double sketch_bytes(int64_t rows, int64_t cols, int64_t k, int probes, int64_t block_rows) {
  const double m = static_cast<double>(cols), kk = static_cast<double>(k);
  const double b = static_cast<double>(std::min(rows, sketch_block_rows(cols, block_rows)));
  const double kp = kk + probes;
  // basis (Q | W), Y, two float64 blocks, Z, the streamed QR's buffer, R and its SVD's copy,
  // QR's tau and workspace; during power steps (sketch_power.cpp) also Q_c (at most k columns),
  // R's right singular vectors and the chain's two M x p blocks (an upper bound: the streamed
  // QR's buffer is freed by then).
  const double qr_buffer = (kk + static_cast<double>(sketch_detail::qr_chunk_rows(k))) * kk;
  // With lanes, each lane's y (M x p) and stage; the lanes share the two blocks.
  const double power = m * kk + kk * kk + (2 + kMaxPowerLanes) * m * probes;
  return 8 * (m * kp + m * kk + 2 * b * m + b * kp + qr_buffer + 3 * kk * kk + 64 * kk + power) +
         kMaxPowerLanes * kStageBytes;
}

namespace {

/// Throws "OPTION VALUE: expected EXPECTED" unless ok.
void require(bool ok, const char* option, int64_t value, const char* expected) {
  if (!ok)
    throw OptionError::for_setting(option, std::string(option) + " " + std::to_string(value),
                                   expected);
}

}  // namespace

void check_options(const SketchOptions& s) {
  require(s.oversampling >= 0, "--sketch-oversampling", s.oversampling, "an oversampling >= 0");
  require(s.probes >= 12 && s.probes <= 256, "--sketch-probes", s.probes, "12 to 256 probes");
  require(s.power_lanes >= 0 && s.power_lanes <= kMaxPowerLanes, "--sketch-power-lanes",
          s.power_lanes, "0 to 4 lanes");
  require(s.range_probes >= 12 && s.range_probes <= 256, "--sketch-range-probes", s.range_probes,
          "12 to 256 probes");
  require(s.max_passes >= 2, "--sketch-max-passes", s.max_passes, "at least 2 passes");
  require(s.power_steps >= 0 && s.power_steps <= 64, "--sketch-power-steps", s.power_steps,
          "0 to 64 steps");
  require(s.max_k >= 0, "--sketch-max-k", s.max_k, "k >= 1, or 0 for min(T, M)");
  require(s.start_nonzeros >= 0 && s.start_nonzeros <= 64, "--sketch-start-nonzeros",
          s.start_nonzeros, "0 to 64 nonzeros per row (0: a Gaussian start)");
}

}  // namespace sb::analysis
