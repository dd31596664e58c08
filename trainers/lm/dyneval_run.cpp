#include "trainers/lm/dyneval_run.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/duration.h"
#include "common/errors.h"
#include "datasets/corpus.h"
#include "trainers/lm/trainer.h"
#include "trainers/lm/word_corpus.h"
#include "trainers/runkit/atomic_write.h"
#include "trainers/runkit/checkpoint.h"
#include "trainers/runkit/device.h"
#include "trainers/runkit/interrupt.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/runkit/process_setup.h"

namespace sb::lm {

namespace {

namespace fs = std::filesystem;
std::string weights_path(const fs::path& run, const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (!fs::is_regular_file(explicit_path))
      throw FormatError::described(explicit_path, "--weights",
                                   "--weights " + explicit_path + ": no such file");
    return explicit_path;
  }
  for (const char* name : {"best_finetune.pt", "best.pt"})
    if (fs::is_regular_file(run / name)) return (run / name).string();
  throw FormatError::described(run.string(), "",
                               "run directory " + run.string() +
                                   " holds neither best_finetune.pt nor best.pt (train_wordlm "
                                   "writes them after its first epoch); pass --weights FILE");
}

std::string number(double x) { return c10::str(x); }  // shortest form: 5e-05, 0.002

void print_grid(const std::vector<double>& lrs, const std::vector<double>& lambdas,
                const std::vector<GridPoint>& points) {
  std::printf("dynamic evaluation grid, valid ppl (rows lr, columns lambda):\n%10s", "lr\\lambda");
  for (double lambda : lambdas) std::printf(" %10s", number(lambda).c_str());
  std::printf("\n");
  for (size_t i = 0; i < lrs.size(); ++i) {
    std::printf("%10s", number(lrs[i]).c_str());
    for (size_t j = 0; j < lambdas.size(); ++j)
      std::printf(" %10.2f", std::exp(points[i * lambdas.size() + j].loss));
    std::printf("\n");
  }
}

/// The JSON of a loss pair: {<split>_loss, <split>_ppl, ...}.
nlohmann::json losses(double valid, double test) {
  return {{"valid_loss", valid},
          {"valid_ppl", std::exp(valid)},
          {"test_loss", test},
          {"test_ppl", std::exp(test)}};
}

}  // namespace

DynevalInputs resolve_dyneval_inputs(const std::string& run_dir, const DynevalConfig& cfg) {
  const fs::path run(run_dir);
  if (!fs::is_directory(run))
    throw FormatError::described(run_dir, "", "run directory " + run_dir + " does not exist");
  const auto config_path = run / "config.toml";
  if (!fs::is_regular_file(config_path))
    throw FormatError::described(
        config_path.string(), "",
        config_path.string() + " does not exist: not a run directory of train_wordlm?");
  DynevalInputs in;
  in.run_config = load_config_file(config_path.string());
  if (!cfg.data.empty()) in.run_config.data = cfg.data;
  validate(in.run_config);
  in.weights = weights_path(run, cfg.weights);
  in.out = cfg.out.empty() ? (run / "dyneval.json").string() : cfg.out;
  return in;
}

DynevalSettings dyneval_settings(const DynevalConfig& cfg) {
  auto grid_lr = parse_number_list(cfg.grid_lr, "--grid-lr");
  auto grid_lambda = parse_number_list(cfg.grid_lambda, "--grid-lambda");
  if (cfg.grid && (grid_lr.empty() || grid_lambda.empty()))
    throw OptionError::described("--grid",
                                 "--grid needs at least one --grid-lr and one --grid-lambda value");
  const auto options = DynamicEvalOptions()
                           .lr(cfg.lr)
                           .lambda(cfg.lambda)
                           .eps(cfg.eps)
                           .bptt(cfg.bptt)
                           .stats_batch_size(cfg.stats_batch_size)
                           .stats_bptt(cfg.stats_bptt)
                           .stats_tokens(cfg.stats_tokens);
  validate(options);
  for (double x : grid_lr) validate(DynamicEvalOptions(options).lr(x));
  for (double x : grid_lambda) validate(DynamicEvalOptions(options).lambda(x));
  return {options, std::move(grid_lr), std::move(grid_lambda)};
}

JsonStdout::JsonStdout(bool enabled) {
  if (!enabled) return;
  std::fflush(stdout);
  fd_ = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

JsonStdout::~JsonStdout() {
  if (fd_ < 0) return;
  std::fflush(stdout);
  ::dup2(fd_, STDOUT_FILENO);
  ::close(fd_);
}

void JsonStdout::print(const std::string& text) const {
  if (fd_ < 0) return;
  if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    // The line as it was; the file is "<stdout>".
    throw WriteError::described("<stdout>", "cannot write the JSON to stdout");
}

namespace {

/// What the evaluation needs: the run's model with its weights and the splits, numbered as
/// train_wordlm numbered the words the weights were trained on.
struct Evaluation {
  data::Corpus corpus;
  std::vector<int64_t> valid, test;  ///< <eos>, then the split's first tokens
  AwdLstm model{nullptr};
};

Evaluation set_up(const std::string& run_dir, const DynevalInputs& in, const DynevalConfig& cfg) {
  const auto& config = in.run_config;
  const int64_t valid_tokens = cfg.valid_tokens < 0 ? config.valid_tokens : cfg.valid_tokens;
  const int64_t test_tokens = cfg.test_tokens < 0 ? config.test_tokens : cfg.test_tokens;
  const auto device = runkit::resolve_device(cfg.device);
  const int n_threads = runkit::set_up_process(cfg.threads);
  // The training tokens the model saw; the evaluation splits at dyneval's own counts.
  Evaluation e;
  e.corpus = load_word_corpus(config, /*truncate_eval=*/false).corpus;
  e.valid = eos_then(e.corpus, e.corpus.valid, valid_tokens);
  e.test = eos_then(e.corpus, e.corpus.test, test_tokens);
  e.model = make_awd_lstm(config, e.corpus.vocab.size());
  e.model->to(device);
  runkit::load_weights(in.weights, *e.model);  // onto the model's device
  std::printf(
      "dyneval: %s, head %s, d %lld; weights %s; %s: %zu train / %zu valid / %zu test tokens; "
      "%d thread%s; device %s\n",
      run_dir.c_str(), config.head.text().c_str(), static_cast<long long>(e.model->d()),
      in.weights.c_str(), config.dataset.c_str(), e.corpus.train.size(), e.valid.size() - 1,
      e.test.size() - 1, n_threads, n_threads == 1 ? "" : "s",
      runkit::describe_device(device).c_str());
  std::fflush(stdout);
  return e;
}

/// The static evaluation (batch 1, no adaptation): {valid_loss, valid_ppl, test_loss, test_ppl,
/// bptt}.
nlohmann::json static_losses(Evaluation& e, const DynamicEvalOptions& options) {
  const auto t = std::chrono::steady_clock::now();
  const double valid =
      static_evaluate(e.model, e.valid, options.bptt(), runkit::timed_progress("static valid"));
  const double test =
      static_evaluate(e.model, e.test, options.bptt(), runkit::timed_progress("static test"));
  std::printf("| static  | valid ppl %9.2f | test ppl %9.2f | batch 1, bptt %lld | %s\n",
              std::exp(valid), std::exp(test), static_cast<long long>(options.bptt()),
              format_duration(seconds_since(t)).c_str());
  std::fflush(stdout);
  auto json = losses(valid, test);
  json["bptt"] = options.bptt();
  return json;
}

GradientStats statistics(Evaluation& e, const DynamicEvalOptions& options, double* seconds) {
  const auto t = std::chrono::steady_clock::now();
  const auto stats =
      gradient_statistics(e.model, e.corpus.train, options, runkit::timed_progress("statistics"));
  *seconds = seconds_since(t);
  std::printf(
      "gradient statistics: %lld batches of %lld x %lld, %lld training tokens, mean MS %.4g, "
      "train loss %.4f (ppl %.2f), %s\n",
      static_cast<long long>(stats.batches), static_cast<long long>(options.stats_batch_size()),
      static_cast<long long>(options.stats_bptt()), static_cast<long long>(stats.tokens),
      stats.mean_ms, stats.mean_loss, std::exp(stats.mean_loss), format_duration(*seconds).c_str());
  std::fflush(stdout);
  return stats;
}

/// The grid search on the validation set: sets the best (lr, lambda) in `settings.options`,
/// appends every point to `grid_json`, returns the best point's validation loss.
double search_grid(Evaluation& e, const GradientStats& stats, DynevalSettings& settings,
                   nlohmann::json& grid_json) {
  auto t = std::chrono::steady_clock::now();  // each point's time: from here or the previous point
  const auto search = grid_search(
      e.model, e.valid, stats, settings.options, settings.grid_lr, settings.grid_lambda,
      [&](const GridPoint& p) {
        grid_json.push_back({{"lr", p.lr},
                             {"lambda", p.lambda},
                             {"valid_loss", p.loss},
                             {"valid_ppl", std::exp(p.loss)}});
        std::printf("  grid lr %-8s lambda %-8s valid ppl %9.2f | %s\n", number(p.lr).c_str(),
                    number(p.lambda).c_str(), std::exp(p.loss),
                    format_duration(seconds_since(t)).c_str());
        std::fflush(stdout);
        t = std::chrono::steady_clock::now();
      },
      [](double x, double l) {
        return runkit::timed_progress("lr " + number(x) + " lambda " + number(l));
      });
  print_grid(settings.grid_lr, settings.grid_lambda, search.points);
  settings.options.lr(search.best.lr).lambda(search.best.lambda);
  std::printf("best on valid: lr %s, lambda %s\n", number(settings.options.lr()).c_str(),
              number(settings.options.lambda()).c_str());
  return search.best.loss;
}

/// The result's fields that the static and the dynamic result share.
nlohmann::json result_head(const std::string& run_dir, const DynevalInputs& in,
                           const Evaluation& e) {
  return {{"run", run_dir},
          {"weights", in.weights},
          {"dataset", in.run_config.dataset},
          {"head", in.run_config.head.text()},
          {"valid_tokens", e.valid.size() - 1},
          {"test_tokens", e.test.size() - 1}};
}

nlohmann::json options_json(const DynamicEvalOptions& o) {
  return {{"lr", o.lr()},
          {"lambda", o.lambda()},
          {"eps", o.eps()},
          {"bptt", o.bptt()},
          {"stats_batch_size", o.stats_batch_size()},
          {"stats_bptt", o.stats_bptt()},
          {"stats_tokens", o.stats_tokens()}};
}

}  // namespace

void run_dyneval(const std::string& run_dir, const DynevalConfig& cfg) {
  const JsonStdout json_stdout(cfg.json);
  const auto start = std::chrono::steady_clock::now();
  const auto in = resolve_dyneval_inputs(run_dir, cfg);
  auto settings = dyneval_settings(cfg);
  check_ranges(cfg);  // the keys validate(options) does not cover (threads, *_tokens)
  Evaluation e = set_up(run_dir, in, cfg);
  // The result file and, with --json, stdout: written once, at the end.
  const auto emit = [&](nlohmann::json result) {
    result["seconds"] = seconds_since(start);
    runkit::write_text_atomically(in.out, result.dump(2) + '\n');
    std::printf("wrote %s (%s in all)\n", in.out.c_str(),
                format_duration(seconds_since(start)).c_str());
    std::fflush(stdout);
    json_stdout.print(result.dump(2) + "\n");
  };
  auto result = result_head(run_dir, in, e);
  result["static"] = static_losses(e, settings.options);
  if (cfg.static_only) return emit(result);

  double stats_seconds = 0;
  const auto stats = statistics(e, settings.options, &stats_seconds);
  nlohmann::json grid_json = nlohmann::json::array();
  const double dynamic_valid = cfg.grid
                                   ? search_grid(e, stats, settings, grid_json)
                                   : dynamic_evaluate(e.model, e.valid, stats, settings.options,
                                                      runkit::timed_progress("dynamic valid"));
  const auto& options = settings.options;
  const double dynamic_test =
      dynamic_evaluate(e.model, e.test, stats, options, runkit::timed_progress("dynamic test"));
  std::printf(
      "| dynamic | valid ppl %9.2f | test ppl %9.2f | lr %s, lambda %s, eps %s, bptt %lld\n",
      std::exp(dynamic_valid), std::exp(dynamic_test), number(options.lr()).c_str(),
      number(options.lambda()).c_str(), number(options.eps()).c_str(),
      static_cast<long long>(options.bptt()));
  result["train_tokens"] = e.corpus.train.size();
  result["options"] = options_json(options);
  result["stats"] = {{"batches", stats.batches},
                     {"tokens", stats.tokens},
                     {"mean_ms", stats.mean_ms},
                     {"train_loss", stats.mean_loss},
                     {"seconds", stats_seconds}};
  result["dynamic"] = losses(dynamic_valid, dynamic_test);
  if (cfg.grid) result["grid"] = grid_json;
  emit(result);
}

}  // namespace sb::lm
