#include "contract/rank_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

namespace sb::contract {

std::string RankReport::certificate() const {
  if (!has_certificate) return "-";
  if (sketch_k > 0) {
    char p[32];
    std::snprintf(p, sizeof p, "%.1e", failure_probability);
    if (certified) return std::string("certified (p <= ") + p + ")";
    // An upper end past the basis is the residual's "anything below k may count" (sketch.h);
    // one narrowed by the Gram path's window (auto's hand-over) reads as a window.
    if (residual_bound >= tol_lo && rank_max > sketch_k)
      return "rank >= " + std::to_string(rank_min);
    // A window on one side of the bound (verdict_only; the verdict start, sketch.h): the verdict
    // is certified, the count inside the window is not.
    if (bound_binding && (rank_max <= bound || rank_min > bound))
      return std::string("verdict certified (p <= ") + p + "); rank in [" +
             std::to_string(rank_min) + ", " + std::to_string(rank_max) + "]";
  }
  return certified ? "certified" : "uncertain +-" + std::to_string(uncertain);
}

namespace {

/// A scalar field that rank.h5 (a root attribute) and the JSON line both carry, under one name.
/// HDF5 stores it as it is (write_attribute in logprob_file.h: a bool as int64 0/1, a NaN as
/// NaN); the JSON writes null for a non-finite double and, where `missing_is_null`, for a negative
/// count or an empty string.
struct SharedField {
  NamedValue field;
  bool missing_is_null = false;
};

/// Every field the two files share: the model's (model_fields, as a dump has them, and its ppl),
/// then the analysis and its report.
std::vector<SharedField> shared_fields(const RankResult& res) {
  const auto& h = res.header;
  const auto& r = res.report;
  std::vector<SharedField> fields;
  for (auto& f : model_fields(h)) fields.push_back({std::move(f)});
  const std::vector<SharedField> analysis = {
      {{"ppl", h.ppl}},
      {{"method", res.method}},
      {{"gram", res.gram}, /*missing_is_null=*/true},
      {{"input", res.input}},
      {{"input_from", res.input_from}},
      {{"final_norm", h.final_norm.empty() ? std::string("none") : h.final_norm}},
      {{"precision", res.precision}},
      {{"seconds", res.seconds}},
      {{"blas_threads", int64_t{res.blas_threads}}},
      {{"blas_library", res.blas_library}},
      {{"blas_core", res.blas_core}},
      {{"processes", int64_t{res.processes}}},
      {{"memory_estimate_mib", res.memory_estimate_mib}},
      {{"peak_rss_mib", res.peak_rss_mib}},
      {{"solver", res.solver}},
      {{"rank", r.rank}},
      {{"tol", r.tol}},
      {{"eps", r.eps}},
      {{"sigma_max", r.sigma_max}},
      {{"rank_numpy", r.rank_numpy}, /*missing_is_null=*/true},
      {{"tol_numpy", r.tol_numpy}},
      {{"bound", r.bound}},
      {{"spectral_gap", r.spectral_gap}},
      {{"largest_gap", r.largest_gap}},
      {{"largest_gap_index", r.largest_gap_index}, /*missing_is_null=*/true},
      {{"verdict", r.verdict()}},
      {{"bound_binding", r.bound_binding}},
      {{"precision_limited", r.precision_limited}},
      {{"eps_to_resolve", r.eps_to_resolve}},
      {{"theorem2_bounded", r.theorem2_bounded}},
      {{"resolvable", r.resolvable}},
      {{"resolution", r.resolution}},
      {{"spectrum", r.spectrum}},
  };
  fields.insert(fields.end(), analysis.begin(), analysis.end());
  return fields;
}

nlohmann::json shared_json(const SharedField& f) {
  return std::visit(
      [&](const auto& v) -> nlohmann::json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, double>)
          return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
        else if constexpr (std::is_same_v<V, std::string>)
          return f.missing_is_null && v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
        else if constexpr (std::is_same_v<V, int64_t>)
          return f.missing_is_null && v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
        else
          return nlohmann::json(v);
      },
      f.field.value);
}

}  // namespace

void write_rank_result(const std::string& path, const RankResult& res) {
  const std::string tmp = h5::temporary_path(path);
  try {
    auto file = h5::create_file(tmp, path);
    const hid_t root = file.get();
    const auto& r = res.report;
    h5::write_vector(root, "singular_values", res.singular_values);
    // The rank at tol x 10^j, j = -2..2 (-1s when not computed).
    h5::write_array(root, "rank_sweep", {r.rank_sweep.size()}, r.rank_sweep.data());
    h5::write_attribute(root, "source", res.source);
    for (const auto& f : shared_fields(res)) write_attribute(root, f.field);
    // The certificate (gram paths; -1 without one).
    h5::write_attribute(root, "certified", int64_t{r.has_certificate ? (r.certified ? 1 : 0) : -1});
    h5::write_attribute(root, "uncertain", r.has_certificate ? r.uncertain : int64_t{-1});
    h5::write_attribute(root, "rank_min", r.rank_min);
    h5::write_attribute(root, "rank_max", r.rank_max);
    h5::write_attribute(root, "tol_lo", r.tol_lo);
    h5::write_attribute(root, "tol_hi", r.tol_hi);
    // The sketch (0, 0, NaN, 0 for the other methods).
    h5::write_attribute(root, "sketch_k", r.sketch_k);
    h5::write_attribute(root, "sketch_passes", int64_t{r.sketch_passes});
    h5::write_attribute(root, "sketch_check_passes", int64_t{r.sketch_check_passes});
    h5::write_attribute(root, "sketch_start_nonzeros", int64_t{r.sketch_start_nonzeros});
    h5::write_attribute(root, "sketch_starts", int64_t{r.sketch_starts});
    h5::write_attribute(root, "sketch_range_start", int64_t{r.sketch_range_start ? 1 : 0});
    h5::write_attribute(root, "sketch_range_probes", int64_t{r.sketch_range_probes});
    h5::write_attribute(root, "sketch_power_passes", int64_t{r.sketch_power_passes});
    h5::write_attribute(root, "residual_bound", r.residual_bound);
    h5::write_attribute(root, "failure_probability", r.failure_probability);
    h5::finish_file(file, tmp, path);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

std::string rank_result_json(const RankResult& res) {
  const auto& r = res.report;
  auto num = [](double x) {
    return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
  };
  nlohmann::json j = {{"file", res.source}};
  for (const auto& f : shared_fields(res)) j[f.field.name] = shared_json(f);
  // The sweep: null when not computed at all, else null at each threshold the method cannot
  // resolve (the sketch below its residual bound).
  j["rank_sweep"] = nullptr;
  if (std::any_of(r.rank_sweep.begin(), r.rank_sweep.end(), [](int64_t k) { return k >= 0; })) {
    j["rank_sweep"] = nlohmann::json::array();
    for (const int64_t k : r.rank_sweep)
      j["rank_sweep"].push_back(k >= 0 ? nlohmann::json(k) : nullptr);
  }
  if (!res.method_note.empty()) j["method_note"] = res.method_note;
  j["seconds_read"] = res.timing.read;
  j["seconds_accumulate"] = res.timing.accumulate;
  j["seconds_solve"] = res.timing.solve;
  j["seconds_reduce"] = res.timing.reduce;
  // The certificate: null without one (exact). uncertain: the true rank lies within rank +- it.
  auto opt = [&](auto x) {
    return r.has_certificate ? nlohmann::json(x) : nlohmann::json(nullptr);
  };
  j["certified"] = opt(r.certified);
  j["uncertain"] = opt(r.uncertain);
  j["rank_min"] = opt(r.rank_min);
  j["rank_max"] = opt(r.rank_max);
  j["tol_lo"] = opt(r.tol_lo);
  j["tol_hi"] = opt(r.tol_hi);
  j["gram_error"] = opt(r.gram_error);
  j["solver_error"] = opt(r.solver_error);
  if (r.sketch_k > 0) {
    j["sketch_k"] = r.sketch_k;
    j["sketch_passes"] = r.sketch_passes;
    j["sketch_check_passes"] = r.sketch_check_passes;
    j["sketch_start_nonzeros"] = r.sketch_start_nonzeros;
    j["sketch_starts"] = r.sketch_starts;
    j["sketch_range_start"] = r.sketch_range_start;
    j["sketch_range_probes"] = r.sketch_range_probes;
    j["sketch_power_passes"] = r.sketch_power_passes;
    j["residual_count"] = r.residual_count;
    j["residual_bound"] = num(r.residual_bound);
    j["failure_probability"] = r.failure_probability;
  }
  if (!r.spectrum) {
    j["sigma_max_iterations"] = r.sigma_max_iterations;
    j["sigma_max_rel_error"] = num(r.sigma_max_rel_error);
    j["seconds_sigma_max"] = res.timing.sigma_max;
  }
  return j.dump();
}

}  // namespace sb::contract
