// fit_logprob_matrix: the softmax bottleneck measured without training noise. A real conditional
// distribution (the smoothed PTB bigram matrix P*(w | previous word) over the most frequent
// contexts) is fitted to convergence by each head with free d-dimensional context vectors, for
// every d asked; the report gives the converged KL(P* || P_theta), a second fit from another seed
// beside it, and the rank of each fitted log-matrix (trainers/fit/fit_logprob.h).
//
//   fit_logprob_matrix --corpus ptb --contexts 200 --d 10,20,40,80
//       --heads softmax,sigsoftmax,sigmoid,mos:K=2,mos:K=4,moss:K=2 --out results/fit/fit.json
//   (one command line)
//   fit_logprob_matrix --low-rank 6 --C 60 --M 80 --d 2,12 --heads softmax --out check.json

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/blas_core.h"
#include "common/command_line.h"
#include "common/duration.h"
#include "common/errors.h"
#include "common/head_spec.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/fit/fit_logprob.h"
#include "trainers/runkit/atomic_write.h"

namespace sb::fit {
// A report row's columns from the fit, each under its member's name (log_q is not a column).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FitResult, kl, steps, converged, last_rel_change, parameters)
}  // namespace sb::fit

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// The command line's settings.
struct FitCli {
  std::string corpus = "ptb", data,
              heads_text = "softmax,sigsoftmax,sigmoid,mos:K=2,mos:K=4,moss:K=2",
              d_text = "10,20,40,80", out;
  int64_t contexts = 200, words = 1000, low_rank = 0, C = 60, M = 80;
  double beta = 1.0, scale = 2.0;
  int restarts = 1;
  bool resume = false;
  sb::fit::FitOptions fo;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  void add_to(CLI::App& app);
};

void FitCli::add_to(CLI::App& app) {
  app.add_option("--corpus", corpus, "corpus name (its training split is the bigram source)")
      ->capture_default_str();
  app.add_option("--data", data,
                 "the corpus directory (default: datasets/<corpus> or "
                 "../shared/datasets/<corpus>)");
  app.add_option("--contexts", contexts, "the most frequent previous words kept as contexts")
      ->capture_default_str();
  app.add_option("--words", words,
                 "the most frequent next words kept, the rest merged into one outcome (0 = all; "
                 "fit_logprob.h: why not all)")
      ->capture_default_str();
  app.add_option("--beta", beta, "smoothing: P* = (n(c,w) + beta u(w)) / (n(c) + beta)")
      ->capture_default_str();
  app.add_option("--low-rank", low_rank,
                 "instead of the corpus: softmax of a rank-R logit matrix (a check)")
      ->capture_default_str();
  app.add_option("--C", C, "--low-rank: contexts")->capture_default_str();
  app.add_option("--M", M, "--low-rank: vocabulary")->capture_default_str();
  app.add_option("--scale", scale, "--low-rank: logit scale")->capture_default_str();
  app.add_option("--heads", heads_text, "comma-separated head specs")->capture_default_str();
  app.add_option("--d", d_text, "comma-separated context dimensions")->capture_default_str();
  app.add_option("--restarts", restarts, "further fits from other seeds (0 or 1)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  app.add_option("--seed", fo.seed, "the first fit's seed")->capture_default_str();
  app.add_option("--lr", fo.lr, "Adam's starting learning rate")->capture_default_str();
  app.add_option("--max-steps", fo.max_steps, "steps at most per fit")->capture_default_str();
  app.add_option("--rel-tol", fo.rel_tol,
                 "a plateau: the KL fell by less than rel-tol x KL + abs-tol in 100 steps")
      ->capture_default_str();
  app.add_option("--abs-tol", fo.abs_tol, "(nats) the plateau test's absolute floor")
      ->capture_default_str();
  app.add_option("--threads", threads, "LibTorch threads (default: cores)")->capture_default_str();
  app.add_option("--out", out, "the JSON report to write (atomically)")->required();
  app.add_flag("--resume", resume,
               "go on from OUT.partial (written after every fit) when it exists: its fits are "
               "kept if its target and settings are this run's; without it, the fits start over");
}

/// --heads: heads with finite, dense log-outputs.
std::vector<sb::HeadSpec> parse_heads(const std::string& text) {
  std::vector<sb::HeadSpec> specs;
  for (const auto& h : split_list(text)) {
    auto spec = sb::HeadSpec::parse(h);
    if (sb::is_adaptive(spec) || spec.kind == sb::HeadKind::sparse ||
        spec.kind == sb::HeadKind::relu)
      throw sb::OptionError::for_setting("--heads", "--heads: '" + h + "'",
                                         "a head with finite, dense log-outputs (softmax, "
                                         "sigsoftmax, sigmoid, mos, moss, spherical, taylor, ...)");
    specs.push_back(spec);
  }
  return specs;
}

/// --d: integers >= 1.
std::vector<int64_t> parse_dims(const std::string& text) {
  std::vector<int64_t> ds;
  for (const auto& d : split_list(text)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(d, &used);
    } catch (const std::exception&) {  // not a number, or out of range: the line below
      used = 0;
    }
    if (used == 0 || used != d.size() || v < 1)
      throw sb::OptionError::for_setting("--d", "--d: '" + d + "'", "integers >= 1");
    ds.push_back(v);
  }
  return ds;
}

/// The target: a low-rank check, or the corpus's smoothed bigram matrix.
sb::fit::Target make_target(const FitCli& cli) {
  if (cli.low_rank > 0)
    return sb::fit::low_rank_target(cli.C, cli.M, cli.low_rank, cli.scale, cli.fo.seed + 1000);
  const auto dir = sb::data::find_corpus_dir(cli.corpus, cli.data);
  const auto words = sb::data::load_corpus(dir);
  auto target =
      sb::fit::bigram_target(words.train, words.vocab.size(), cli.contexts, cli.beta, cli.words);
  target.what +=
      " (" + cli.corpus + " training split, " + std::to_string(words.train.size()) + " tokens)";
  return target;
}

/// The report's target and settings sections (printing the target's line).
nlohmann::json report_head(const sb::fit::Target& target, double entropy, const FitCli& cli) {
  const auto target_rank = sb::fit::numerical_rank(target.log_p);
  std::printf("target: %s: C = %lld, M = %lld, rank of log P* %lld, weighted entropy %.4f nats\n",
              target.what.c_str(), static_cast<long long>(target.log_p.size(0)),
              static_cast<long long>(target.log_p.size(1)),
              static_cast<long long>(target_rank.rank), entropy);
  std::fflush(stdout);
  const auto& fo = cli.fo;
  nlohmann::json report;
  report["target"] = {
      {"what", target.what},      {"C", target.log_p.size(0)},          {"M", target.log_p.size(1)},
      {"rank", target_rank.rank}, {"sigma_max", target_rank.sigma_max}, {"tol", target_rank.tol},
      {"entropy", entropy}};
  report["settings"] = {{"lr", fo.lr},
                        {"max_steps", fo.max_steps},
                        {"rel_tol", fo.rel_tol},
                        {"abs_tol", fo.abs_tol},
                        {"words", cli.low_rank > 0 ? 0 : cli.words},
                        {"check_every", fo.check_every},
                        {"lr_halvings", fo.lr_halvings},
                        {"seed", fo.seed},
                        {"threads", cli.threads},
                        {"bias", fo.bias}};
  report["fits"] = nlohmann::json::array();
  return report;
}

/// Where the fits stand: the one being made (1-based), how many in all, since when.
struct FitCount {
  size_t index, total;
  std::chrono::steady_clock::time_point start;

  std::string eta() const {
    return sb::format_duration(sb::seconds_since(start) / static_cast<double>(index) *
                               static_cast<double>(total - index));
  }
};

/// One head at one d: the fit (and its restart), as a report row; prints its line with the ETA.
nlohmann::json fit_row(const sb::fit::Target& target, const sb::HeadSpec& spec, int64_t d,
                       const FitCli& cli, const FitCount& count) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<sb::fit::FitResult> runs;
  for (int k = 0; k <= cli.restarts; ++k) {
    sb::fit::FitOptions o = cli.fo;
    o.spec = spec;
    o.d = d;
    o.seed = cli.fo.seed + static_cast<uint64_t>(k);
    o.progress = [&](int64_t step, double kl) {
      if (step % 1000 != 0) return;
      std::printf("  %s d = %lld seed %llu: step %lld, KL %.5f\n", spec.to_string().c_str(),
                  static_cast<long long>(d), static_cast<unsigned long long>(o.seed),
                  static_cast<long long>(step), kl);
      std::fflush(stdout);
    };
    runs.push_back(sb::fit::fit(target, o));
  }
  const auto& r = runs[0];
  const auto rank = sb::fit::numerical_rank(r.log_q);
  nlohmann::json row = r;  // kl, steps, converged, last_rel_change, parameters
  row.update({{"head", spec.to_string()},
              {"d", d},
              {"rank", rank.rank},
              {"bound", sb::theorem2_bounded(spec.kind) ? d + 2 : -1},
              {"seconds", sb::seconds_since(t0)}});
  if (runs.size() > 1) {
    const double a = runs[0].kl, b = runs[1].kl;
    row["restart"] = {{"seed", cli.fo.seed + 1},
                      {"kl", b},
                      {"converged", runs[1].converged},
                      {"steps", runs[1].steps}};
    row["relative_disagreement"] = std::abs(a - b) / std::max({a, b, 1e-12});
  }
  std::printf(
      "fit %zu/%zu | %-10s d = %-4lld | KL %.5f%s | rank %lld | %s%lld steps | %s | ETA %s\n",
      count.index, count.total, spec.to_string().c_str(), static_cast<long long>(d), r.kl,
      runs.size() > 1 ? (" (restart " + std::to_string(runs[1].kl) + ")").c_str() : "",
      static_cast<long long>(rank.rank), r.converged ? "converged, " : "NOT converged, ",
      static_cast<long long>(r.steps), sb::format_duration(sb::seconds_since(t0)).c_str(),
      count.eta().c_str());
  std::fflush(stdout);
  return row;
}

/// A partial report's rows by (head, d).
using SavedFits = std::map<std::pair<std::string, int64_t>, nlohmann::json>;

/// The fits a partial report already holds, if `resume` and OUT.partial exists: refused unless
/// its target and settings are this run's (then its rows are this run's rows too).
SavedFits resumed_fits(const FitCli& cli, const nlohmann::json& head) {
  const std::string partial = cli.out + ".partial";
  SavedFits fits;
  if (!cli.resume || !std::filesystem::exists(partial)) return fits;
  std::ifstream in(partial);
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(in);
    for (const char* key : {"target", "settings"})
      if (!saved.contains(key) || saved[key] != head[key])
        throw sb::InputError(
            partial, key, "this run's (" + head[key].dump() + ")",
            (saved.contains(key) ? saved[key].dump() : "none") + "; remove the file to start over");
    for (const auto& row : saved.at("fits"))
      fits[{row.at("head").get<std::string>(), row.at("d").get<int64_t>()}] = row;
  } catch (const nlohmann::json::exception&) {
    throw sb::FormatError::described(partial, "", partial + ": not a JSON fit report",
                                     "a JSON fit report");
  }
  return fits;
}

}  // namespace

namespace sb::fit {

int fit_logprob_matrix_main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Fit a conditional distribution P*(w | c) with free context vectors h_c in R^d and each "
      "head's output layer, to convergence, for every d; report the converged KL(P* || P_theta) "
      "(with a second fit from another seed) and the rank of every fitted log-matrix."};
  app.footer(
      "Examples:\n"
      "  fit_logprob_matrix --corpus ptb --contexts 200 --d 10,20,40,80 \\\n"
      "      --heads softmax,sigsoftmax,sigmoid,mos:K=2,mos:K=4,moss:K=2 --out fit.json\n"
      "  fit_logprob_matrix --low-rank 6 --C 60 --M 80 --d 2,12 --heads softmax --out check.json\n"
      "     (a target of known rank: softmax reaches KL ~ 0 at d = 12, not at d = 2)");
  FitCli cli;
  cli.add_to(app);
  if (const int status = sb::parse_or_exit(app, argc, argv); status >= 0) return status;
  try {
    torch::set_num_threads(cli.threads);
    // Validate everything before any work.
    const auto specs = parse_heads(cli.heads_text);
    const auto ds = parse_dims(cli.d_text);
    if (specs.empty() || ds.empty())
      throw sb::OptionError::for_setting("--heads", "--heads and --d", "at least one of each");
    if (cli.words < 0)
      throw sb::OptionError("--words", "an integer >= 0 (0 = all)", std::to_string(cli.words));
    const auto target = make_target(cli);
    const double entropy = sb::fit::weighted_entropy(target);
    nlohmann::json report = report_head(target, entropy, cli);
    const SavedFits saved = resumed_fits(cli, report);
    const auto start = std::chrono::steady_clock::now();
    const size_t total = specs.size() * ds.size();
    size_t done = 0;
    double seconds = 0;  // the fits' own times, over every piece of a resumed report
    for (const auto& spec : specs)
      for (const int64_t d : ds) {
        ++done;
        if (const auto row = saved.find({spec.to_string(), d}); row != saved.end()) {
          std::printf("fit %zu/%zu | %s d = %lld: from %s.partial\n", done, total,
                      spec.to_string().c_str(), static_cast<long long>(d), cli.out.c_str());
          report["fits"].push_back(row->second);
        } else {
          report["fits"].push_back(fit_row(target, spec, d, cli, {done, total, start}));
          // Every finished fit is kept: a run stopped now resumes here (--resume).
          sb::runkit::write_text_atomically(cli.out + ".partial", report.dump(2) + "\n");
        }
        seconds += report["fits"].back().value("seconds", 0.0);
      }
    report["seconds"] = seconds;
    sb::runkit::write_text_atomically(cli.out, report.dump(2) + "\n");
    std::filesystem::remove(cli.out + ".partial");
    std::printf("wrote %s (%s)\n", cli.out.c_str(),
                sb::format_duration(sb::seconds_since(start)).c_str());
  } catch (...) {
    return sb::report_error("fit_logprob_matrix", std::current_exception());
  }
  return sb::kExitOk;
}

}  // namespace sb::fit
