#include "trainers/lm/dyneval_run.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/duration.h"
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
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::string weights_path(const fs::path& run, const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (!fs::is_regular_file(explicit_path))
      throw std::runtime_error("--weights " + explicit_path + ": no such file");
    return explicit_path;
  }
  for (const char* name : {"best_finetune.pt", "best.pt"})
    if (fs::is_regular_file(run / name)) return (run / name).string();
  throw std::runtime_error(
      "run directory " + run.string() +
      " holds neither best_finetune.pt nor best.pt (train_wordlm writes them after "
      "its first epoch); pass --weights FILE");
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
    throw std::runtime_error("run directory " + run_dir + " does not exist");
  const auto config_path = run / "config.toml";
  if (!fs::is_regular_file(config_path))
    throw std::runtime_error(config_path.string() +
                             " does not exist: not a run directory of train_wordlm?");
  DynevalInputs in;
  in.run_config = load_config_file(config_path.string());
  if (!cfg.data.empty()) in.run_config.data = cfg.data;
  validate(in.run_config);
  in.weights = weights_path(run, cfg.weights);
  in.out = cfg.out.empty() ? (run / "dyneval.json").string() : cfg.out;
  return in;
}

DynamicEvalOptions dyneval_options(const DynevalConfig& cfg) {
  const auto grid_lr = parse_number_list(cfg.grid_lr, "--grid-lr");
  const auto grid_lambda = parse_number_list(cfg.grid_lambda, "--grid-lambda");
  if (cfg.grid && (grid_lr.empty() || grid_lambda.empty()))
    throw std::runtime_error("--grid needs at least one --grid-lr and one --grid-lambda value");
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
  return options;
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
    throw std::runtime_error("cannot write the JSON to stdout");
}

void run_dyneval(const std::string& run_dir, const DynevalConfig& cfg) {
  const JsonStdout json_stdout(cfg.json);
  const auto start = clock_type::now();
  const auto in = resolve_dyneval_inputs(run_dir, cfg);
  const auto& config = in.run_config;
  const int64_t valid_tokens = cfg.valid_tokens < 0 ? config.valid_tokens : cfg.valid_tokens;
  const int64_t test_tokens = cfg.test_tokens < 0 ? config.test_tokens : cfg.test_tokens;
  auto options = dyneval_options(cfg);
  const auto grid_lr = parse_number_list(cfg.grid_lr, "--grid-lr");
  const auto grid_lambda = parse_number_list(cfg.grid_lambda, "--grid-lambda");
  check_ranges(cfg);  // the keys validate(options) does not cover (threads, *_tokens)

  const auto device = runkit::resolve_device(cfg.device);
  const int n_threads = runkit::set_up_process(cfg.threads);
  // As train_wordlm numbered the words the weights were trained on (and the training tokens
  // the model saw); the evaluation splits at dyneval's own counts.
  auto corpus = load_word_corpus(config, /*truncate_eval=*/false).corpus;
  const auto valid = eos_then(corpus, corpus.valid, valid_tokens);
  const auto test = eos_then(corpus, corpus.test, test_tokens);
  auto model = make_awd_lstm(config, corpus.vocab.size());
  model->to(device);
  runkit::load_weights(in.weights, *model);  // onto the model's device
  std::printf(
      "dyneval: %s, head %s, d %lld; weights %s; %s: %zu train / %zu valid / %zu test tokens; "
      "%d threads; device %s\n",
      run_dir.c_str(), config.head.c_str(), static_cast<long long>(model->d()), in.weights.c_str(),
      config.dataset.c_str(), corpus.train.size(), valid.size() - 1, test.size() - 1, n_threads,
      runkit::describe_device(device).c_str());
  std::fflush(stdout);

  auto t = clock_type::now();
  const double static_valid =
      static_evaluate(model, valid, options.bptt(), runkit::timed_progress("static valid"));
  const double static_test =
      static_evaluate(model, test, options.bptt(), runkit::timed_progress("static test"));
  std::printf("| static  | valid ppl %9.2f | test ppl %9.2f | batch 1, bptt %lld | %s\n",
              std::exp(static_valid), std::exp(static_test), static_cast<long long>(options.bptt()),
              format_duration(seconds_since(t)).c_str());
  std::fflush(stdout);

  // The result file and, with --json, stdout: written once, at the end.
  const auto emit = [&](const nlohmann::json& result) {
    runkit::write_text_atomically(in.out, result.dump(2) + '\n');
    std::printf("wrote %s (%s in all)\n", in.out.c_str(),
                format_duration(seconds_since(start)).c_str());
    std::fflush(stdout);
    json_stdout.print(result.dump(2) + "\n");
  };
  auto static_json = losses(static_valid, static_test);
  static_json["bptt"] = options.bptt();
  if (cfg.static_only) {
    emit({{"run", run_dir},
          {"weights", in.weights},
          {"dataset", config.dataset},
          {"head", config.head},
          {"valid_tokens", valid.size() - 1},
          {"test_tokens", test.size() - 1},
          {"static", static_json},
          {"seconds", seconds_since(start)}});
    return;
  }

  t = clock_type::now();
  const auto stats =
      gradient_statistics(model, corpus.train, options, runkit::timed_progress("statistics"));
  const double stats_seconds = seconds_since(t);
  std::printf(
      "gradient statistics: %lld batches of %lld x %lld, %lld training tokens, mean MS %.4g, "
      "train loss %.4f (ppl %.2f), %s\n",
      static_cast<long long>(stats.batches), static_cast<long long>(options.stats_batch_size()),
      static_cast<long long>(options.stats_bptt()), static_cast<long long>(stats.tokens),
      stats.mean_ms, stats.mean_loss, std::exp(stats.mean_loss),
      format_duration(stats_seconds).c_str());
  std::fflush(stdout);

  nlohmann::json grid_json = nlohmann::json::array();
  double dynamic_valid = 0;
  if (cfg.grid) {
    t = clock_type::now();  // each point's time: from here or the previous point
    const auto search = grid_search(
        model, valid, stats, options, grid_lr, grid_lambda,
        [&](const GridPoint& p) {
          grid_json.push_back({{"lr", p.lr},
                               {"lambda", p.lambda},
                               {"valid_loss", p.loss},
                               {"valid_ppl", std::exp(p.loss)}});
          std::printf("  grid lr %-8s lambda %-8s valid ppl %9.2f | %s\n", number(p.lr).c_str(),
                      number(p.lambda).c_str(), std::exp(p.loss),
                      format_duration(seconds_since(t)).c_str());
          std::fflush(stdout);
          t = clock_type::now();
        },
        [](double x, double l) {
          return runkit::timed_progress("lr " + number(x) + " lambda " + number(l));
        });
    print_grid(grid_lr, grid_lambda, search.points);
    options.lr(search.best.lr).lambda(search.best.lambda);
    std::printf("best on valid: lr %s, lambda %s\n", number(options.lr()).c_str(),
                number(options.lambda()).c_str());
    dynamic_valid = search.best.loss;
  } else {
    dynamic_valid =
        dynamic_evaluate(model, valid, stats, options, runkit::timed_progress("dynamic valid"));
  }
  t = clock_type::now();
  const double dynamic_test =
      dynamic_evaluate(model, test, stats, options, runkit::timed_progress("dynamic test"));
  std::printf(
      "| dynamic | valid ppl %9.2f | test ppl %9.2f | lr %s, lambda %s, eps %s, bptt %lld\n",
      std::exp(dynamic_valid), std::exp(dynamic_test), number(options.lr()).c_str(),
      number(options.lambda()).c_str(), number(options.eps()).c_str(),
      static_cast<long long>(options.bptt()));

  nlohmann::json result{{"run", run_dir},
                        {"weights", in.weights},
                        {"dataset", config.dataset},
                        {"head", config.head},
                        {"train_tokens", corpus.train.size()},
                        {"valid_tokens", valid.size() - 1},
                        {"test_tokens", test.size() - 1},
                        {"options",
                         {{"lr", options.lr()},
                          {"lambda", options.lambda()},
                          {"eps", options.eps()},
                          {"bptt", options.bptt()},
                          {"stats_batch_size", options.stats_batch_size()},
                          {"stats_bptt", options.stats_bptt()},
                          {"stats_tokens", options.stats_tokens()}}},
                        {"stats",
                         {{"batches", stats.batches},
                          {"tokens", stats.tokens},
                          {"mean_ms", stats.mean_ms},
                          {"train_loss", stats.mean_loss},
                          {"seconds", stats_seconds}}},
                        {"static", static_json},
                        {"dynamic", losses(dynamic_valid, dynamic_test)},
                        {"seconds", seconds_since(start)}};
  if (cfg.grid) result["grid"] = grid_json;
  emit(result);
}

}  // namespace sb::lm
