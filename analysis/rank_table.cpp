#include "analysis/rank_table.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

namespace sb::analysis {

namespace {

// The rank as the table and the warnings state it: the count when it is certified (or no
// certificate was asked), else the window rank_min..rank_max, never the nominal count inside it.
std::string stated_rank(const contract::RankReport& p) {
  if (p.has_certificate && !p.certified)
    return std::to_string(p.rank_min) + ".." + std::to_string(p.rank_max);
  return std::to_string(p.rank);
}

// One row of the table: the file's header, the ranks by each criterion, the verdict.
void print_row(const contract::RankResult& r) {
  const auto& h = r.header;
  const auto& p = r.report;
  std::string file = std::filesystem::path(r.source).filename().string();
  if (file.size() > 28) file = "..." + file.substr(file.size() - 25);
  const std::string rank_np = p.rank_numpy >= 0 ? std::to_string(p.rank_numpy) : "-";
  std::string sweep = "-";
  if (std::any_of(p.rank_sweep.begin(), p.rank_sweep.end(), [](int64_t k) { return k >= 0; })) {
    sweep.clear();
    for (size_t i = 0; i < p.rank_sweep.size(); ++i)  // "?": below the method's resolution
      sweep += (i ? "," : "") +
               (p.rank_sweep[i] >= 0 ? std::to_string(p.rank_sweep[i]) : std::string("?"));
  }
  char gap[48] = "-";
  if (p.largest_gap_index >= 0)
    std::snprintf(gap, sizeof gap, "%.3g@%lld", p.largest_gap,
                  static_cast<long long>(p.largest_gap_index));
  const std::string method = r.gram.empty() ? r.method : r.method + "(" + r.gram + ")";
  std::printf(
      "%-28s %-11s %6lld %7lld %5lld %4d %-8s %6lld %8s %8s %-24s %10.3e %9.3e %10.4e %9.3g "
      "%14s %-13s %-12s %8.2f %s\n",
      file.c_str(), h.head.c_str(), static_cast<long long>(h.M), static_cast<long long>(h.T),
      static_cast<long long>(h.d), h.bias ? 1 : 0, r.input.c_str(), static_cast<long long>(p.bound),
      stated_rank(p).c_str(), rank_np.c_str(), sweep.c_str(), p.tol, p.eps, p.sigma_max,
      p.spectral_gap, gap, p.verdict().c_str(), method.c_str(), r.seconds, p.certificate().c_str());
}

// What the columns' criteria mean, once under the table.
void print_criteria() {
  std::printf(
      "criteria: rank_NR (tol = 0.5 sqrt(M + T + 1) sigma_max eps) is the one to hold against the "
      "bound, d + 1 + bias for log-probs (log p = z - logsumexp(z) 1 adds the normaliser's "
      "direction; the adaptive softmax: one more per tail cluster), d + bias for logits;\n"
      "          numpy's tol (sigma_max max(M, T) eps) can report rank 1 on log-probs, whose "
      "sigma_max is the direction of the rows' mean; sweep and max_gap@i show how firm the rank "
      "is.\n");
}

// The lines under the table that concern one result: a bound exceeded, a bound that does not
// bind, a method that cannot resolve tol, the sketch's residual and window, a Gram window.
void print_warnings(const contract::RankResult& r) {
  const auto& p = r.report;
  if (p.theorem2_bounded && !p.within_bound)
    std::printf("! %s: head '%s' is bounded by Theorem 2 (rank <= %lld) but has rank %s\n",
                r.source.c_str(), r.header.head.c_str(), static_cast<long long>(p.bound),
                stated_rank(p).c_str());
  if (!p.bound_binding)
    std::printf(
        "note: %s: the bound %lld is not below min(M, T) = %lld, so Theorem 2 does not "
        "constrain this matrix (any rank up to full is allowed): verdict bound_not_binding\n",
        r.source.c_str(), static_cast<long long>(p.bound),
        static_cast<long long>(std::min(r.header.M, r.header.T)));
  if (p.precision_limited)
    std::printf(
        "! %s: rank %lld lies below the bound %lld only because tol %.3e (eps %.3g) cuts a "
        "spectrum that goes on (the next singular value is %.3e): verdict "
        "unresolved_at_precision; data stored with eps below %.3g (e.g. float32) would decide it\n",
        r.source.c_str(), static_cast<long long>(p.rank), static_cast<long long>(p.bound), p.tol,
        p.eps, p.eps_to_resolve * p.tol / p.eps, p.eps_to_resolve);
  if (!p.resolvable)
    std::printf(
        "! %s: method '%s' resolves singular values only down to %.3e (%.1e sigma_max), "
        "above the tolerance %.3e: the rank may be underestimated; use --method sketch "
        "(float64 data: its float64 finish) or --method exact --precision float64\n",
        r.source.c_str(), r.method.c_str(), p.resolution, p.resolution / p.sigma_max, p.tol);
  // The residual the bound is on: Q's (k columns), or the top c Ritz vectors' after power steps
  // (analysis/residual_power.h).
  char residual[96] = "||A (I - QQ^T)||";
  if (p.residual_count > 0)
    std::snprintf(residual, sizeof residual, "||A (I - Q_c Q_c^T)|| (c = %lld, %d power steps)",
                  static_cast<long long>(p.residual_count), p.sketch_power_passes);
  if (p.sketch_k > 0)
    std::printf(
        "sketch: %s: k = %lld after %d passes; %s <= %.3e (tol %.3e) except with "
        "probability %.1e; singular values: the %lld Ritz values (lower bounds)%s\n",
        r.source.c_str(), static_cast<long long>(p.sketch_k), p.sketch_passes, residual,
        p.residual_bound, p.tol, p.failure_probability, static_cast<long long>(p.sketch_k),
        p.residual_bound >= p.tol_lo
            ? "; the residual is not below tol, so singular values past k may exceed it"
            : "");
  if (p.has_certificate && !p.certified && p.sketch_k > 0)
    std::printf("! %s: the sketch's window: the rank is %lld..%lld\n", r.source.c_str(),
                static_cast<long long>(p.rank_min), static_cast<long long>(p.rank_max));
  else if (p.has_certificate && !p.certified)
    std::printf(
        "! %s: %lld singular value(s) may lie within the rounding of the float64 Gram matrix "
        "of tol (between %.4e and %.4e): the rank is %lld..%lld\n",
        r.source.c_str(), static_cast<long long>(p.rank_max - p.rank_min), p.tol_lo, p.tol_hi,
        static_cast<long long>(p.rank_min), static_cast<long long>(p.rank_max));
}

}  // namespace

void print_table(const std::vector<contract::RankResult>& results) {
  std::printf(
      "%-28s %-11s %6s %7s %5s %4s %-8s %6s %8s %8s %-24s %10s %9s %10s %9s %14s %-13s %-12s "
      "%8s %s\n",
      "file", "head", "M", "T", "d", "bias", "input", "bound", "rank_NR", "rank_np",
      "sweep(tol*10^-2..2)", "tol", "eps", "sigma_max", "gap@b", "max_gap@i", "verdict", "method",
      "seconds", "certificate");
  for (const auto& r : results) print_row(r);
  for (const auto& r : results) {
    if (!r.input_note.empty())
      std::printf("input: %s: %s\n", r.source.c_str(), r.input_note.c_str());
    if (!r.method_note.empty())
      std::printf("method: %s: %s\n", r.source.c_str(), r.method_note.c_str());
  }
  print_criteria();
  for (const auto& r : results) print_warnings(r);
}

}  // namespace sb::analysis
