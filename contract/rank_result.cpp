#include "contract/rank_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace sb::contract {

std::string RankReport::certificate() const {
  if (!has_certificate) return "-";
  if (sketch_k > 0) {
    char p[32];
    std::snprintf(p, sizeof p, "%.1e", failure_probability);
    if (certified) return std::string("certified (p <= ") + p + ")";
    if (residual_bound >= tol_lo) return "rank >= " + std::to_string(rank_min);
  }
  return certified ? "certified" : "uncertain +-" + std::to_string(uncertain);
}

void write_rank_result(const std::string& path, const RankResult& res) {
  const std::string tmp = h5::temporary_path(path);
  try {
    auto file = h5::create_file(tmp, path);
    const hid_t root = file.get();
    const auto& h = res.header;
    const auto& r = res.report;
    h5::write_vector(root, "singular_values", res.singular_values);
    // The rank at tol x 10^j, j = -2..2 (-1s when not computed).
    h5::write_array(root, "rank_sweep", {r.rank_sweep.size()}, r.rank_sweep.data());
    h5::write_attribute(root, "source", res.source);
    write_model_attributes(root, h);
    h5::write_attribute(root, "ppl", h.ppl);
    h5::write_attribute(root, "method", res.method);
    h5::write_attribute(root, "gram", res.gram);
    h5::write_attribute(root, "input", res.input);
    h5::write_attribute(root, "input_from", res.input_from);
    h5::write_attribute(root, "precision", res.precision);
    h5::write_attribute(root, "seconds", res.seconds);
    h5::write_attribute(root, "blas_threads", int64_t{res.blas_threads});
    h5::write_attribute(root, "blas_library", res.blas_library);
    h5::write_attribute(root, "blas_core", res.blas_core);
    h5::write_attribute(root, "processes", int64_t{res.processes});
    h5::write_attribute(root, "rank", r.rank);
    h5::write_attribute(root, "tol", r.tol);
    h5::write_attribute(root, "eps", r.eps);
    h5::write_attribute(root, "sigma_max", r.sigma_max);
    h5::write_attribute(root, "rank_numpy", r.rank_numpy);
    h5::write_attribute(root, "tol_numpy", r.tol_numpy);
    h5::write_attribute(root, "bound", r.bound);
    h5::write_attribute(root, "spectral_gap", r.spectral_gap);
    h5::write_attribute(root, "largest_gap", r.largest_gap);
    h5::write_attribute(root, "largest_gap_index", r.largest_gap_index);
    h5::write_attribute(root, "verdict", r.verdict());
    h5::write_attribute(root, "bound_binding", int64_t{r.bound_binding ? 1 : 0});
    h5::write_attribute(root, "theorem2_bounded", int64_t{r.theorem2_bounded ? 1 : 0});
    h5::write_attribute(root, "resolvable", int64_t{r.resolvable ? 1 : 0});
    h5::write_attribute(root, "resolution", r.resolution);
    h5::write_attribute(root, "solver", res.solver);
    h5::write_attribute(root, "spectrum", int64_t{r.spectrum ? 1 : 0});
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
    h5::write_attribute(root, "residual_bound", r.residual_bound);
    h5::write_attribute(root, "failure_probability", r.failure_probability);
    h5::finish_file(file, tmp, path);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

std::string rank_result_json(const RankResult& res) {
  const auto& h = res.header;
  const auto& r = res.report;
  auto num = [](double x) {
    return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
  };
  // The sweep: null when not computed at all, else null at each threshold the method cannot
  // resolve (the sketch below its residual bound).
  nlohmann::json sweep = nullptr;
  if (std::any_of(r.rank_sweep.begin(), r.rank_sweep.end(), [](int64_t k) { return k >= 0; })) {
    sweep = nlohmann::json::array();
    for (const int64_t k : r.rank_sweep) sweep.push_back(k >= 0 ? nlohmann::json(k) : nullptr);
  }
  nlohmann::json j = {
      {"file", res.source},
      {"head", h.head},
      {"dataset", h.dataset},
      {"split", h.split},
      {"M", h.M},
      {"T", h.T},
      {"d", h.d},
      {"bias", h.bias ? 1 : 0},
      {"ppl", num(h.ppl)},
      {"compute_dtype", h.compute_dtype},
      {"method", res.method},
      {"gram", res.gram.empty() ? nlohmann::json(nullptr) : nlohmann::json(res.gram)},
      {"input", res.input},
      {"input_from", res.input_from},
      {"precision", res.precision},
      {"seconds", res.seconds},
      {"rank", r.rank},
      {"tol", num(r.tol)},
      {"eps", r.eps},
      {"sigma_max", num(r.sigma_max)},
      {"rank_numpy", r.rank_numpy >= 0 ? nlohmann::json(r.rank_numpy) : nlohmann::json(nullptr)},
      {"tol_numpy", num(r.tol_numpy)},
      {"bound", r.bound},
      {"spectral_gap", num(r.spectral_gap)},
      {"rank_sweep", sweep},
      {"largest_gap", num(r.largest_gap)},
      {"largest_gap_index",
       r.largest_gap_index >= 0 ? nlohmann::json(r.largest_gap_index) : nlohmann::json(nullptr)},
      {"verdict", r.verdict()},
      {"bound_binding", r.bound_binding},
      {"theorem2_bounded", r.theorem2_bounded},
      {"resolvable", r.resolvable},
      {"resolution", num(r.resolution)},
      {"seconds_read", res.timing.read},
      {"seconds_accumulate", res.timing.accumulate},
      {"seconds_solve", res.timing.solve},
      {"blas_threads", res.blas_threads},
      {"blas_library", res.blas_library},
      {"blas_core", res.blas_core},
      {"processes", res.processes},
      {"seconds_reduce", res.timing.reduce},
      {"solver", res.solver},
      {"spectrum", r.spectrum},
  };
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
