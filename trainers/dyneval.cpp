// dyneval: dynamic evaluation (Krause et al. 2017) of a model trained by train_wordlm, the last
// step of Kanai et al. 2018's language-model tables ("+dynamic eval."): gradient statistics on the
// training data, then static and dynamic valid/test perplexities, optionally after a grid search
// of lr x lambda on the validation set.

#include <torch/torch.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/runkit/atomic_write.h"
#include "trainers/runkit/checkpoint.h"
#include "trainers/lm/config.h"
#include "trainers/runkit/device.h"
#include "trainers/lm/dynamic_eval.h"
#include "trainers/runkit/process_setup.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/lm/trainer.h"

namespace {

namespace fs = std::filesystem;
using sb::lm::DynamicEvalOptions;
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
                const std::vector<sb::lm::GridPoint>& points) {
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Dynamic evaluation (Krause et al. 2017) of a train_wordlm run, as in Kanai et al. 2018: "
      "gradient statistics MS = sqrt(mean g^2) on the training data (batch --stats-batch-size, "
      "segments of --stats-bptt tokens), then the validation and test sets are read with batch "
      "size 1 in segments of --bptt tokens; each segment is scored first and then its gradient "
      "g moves the weights: W <- W - lr g / (MS + eps) + lambda decrate (W0 - W), decrate = "
      "min(MS / mean(MS), 1 / lambda), W0 = the trained weights. The static perplexities (same "
      "batch size 1 and segments, no updates) are printed first. Every token of a split is "
      "predicted (<eos> in front). All passes run without dropout.\n"
      "Writes <run>/dyneval.json (or --out) atomically. Exit status 2 on bad input."};
  std::string run_dir, weights, data_dir, out_path, device_name = "auto";
  DynamicEvalOptions defaults;
  double lr = defaults.lr(), lambda = defaults.lambda(), eps = defaults.eps();
  int64_t bptt = defaults.bptt(), stats_batch_size = defaults.stats_batch_size();
  int64_t stats_bptt = defaults.stats_bptt(), stats_tokens = defaults.stats_tokens();
  int64_t valid_tokens = -1, test_tokens = -1, threads = 0;
  bool grid = false, json = false, static_only = false;
  // The paper's grid for single heads (Kanai et al. 2018, supplementary C.1.1).
  std::vector<double> grid_lr{3e-5, 4e-5, 5e-5, 6e-5, 7e-5, 1e-4};
  std::vector<double> grid_lambda{1e-3, 2e-3, 3e-3, 5e-3};
  app.add_option("--run", run_dir,
                 "run directory of train_wordlm: reads config.toml and best_finetune.pt (else "
                 "best.pt)")
      ->required();
  app.add_option("--weights", weights, "weights file to evaluate instead (save_weights format)");
  app.add_option("--lr", lr, "step size of the normalised gradient step (>= 0)")
      ->capture_default_str();
  app.add_option("--lambda", lambda, "decay rate towards the trained weights (>= 0)")
      ->capture_default_str();
  app.add_option("--eps", eps, "added to MS in the step's denominator (> 0)")
      ->capture_default_str();
  app.add_option("--bptt", bptt, "tokens per evaluation segment = per update")
      ->capture_default_str();
  app.add_option("--stats-batch-size", stats_batch_size, "batch size of the gradient statistics")
      ->capture_default_str();
  app.add_option("--stats-bptt", stats_bptt, "segment length of the gradient statistics")
      ->capture_default_str();
  app.add_option("--stats-tokens", stats_tokens,
                 "training tokens for the gradient statistics, from the first segments of all "
                 "batch columns (0 = the whole training set of the run)")
      ->capture_default_str();
  app.add_flag("--grid", grid,
               "evaluate every (lr, lambda) of --grid-lr x --grid-lambda on the validation set, "
               "print the table, then evaluate the test set with the best pair (--lr and "
               "--lambda are ignored)");
  app.add_option("--grid-lr", grid_lr, "learning rates of the grid (comma-separated)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--grid-lambda", grid_lambda, "lambdas of the grid (comma-separated)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--valid-tokens", valid_tokens,
                 "evaluate the first N validation tokens (0 = all; default: the run's "
                 "valid_tokens)");
  app.add_option("--test-tokens", test_tokens,
                 "evaluate the first N test tokens (0 = all; default: the run's test_tokens)");
  app.add_option("--data", data_dir, "corpus directory (default: the run's data, else searched)");
  app.add_option("--threads", threads, "threads for LibTorch and OpenBLAS (0 = number of cores)")
      ->capture_default_str();
  app.add_option("--device", device_name,
                 "auto | cpu | cuda | cuda:N (auto = cuda when LibTorch has it and a GPU is "
                 "visible); the run's weights load onto it whatever device trained them")
      ->capture_default_str();
  app.add_option("--out", out_path, "result file (default: <run>/dyneval.json)");
  app.add_flag("--static-only", static_only,
               "only the static perplexities (no gradient statistics, no updates): how "
               "make reproduce scores best.pt, the model after training, on valid and test");
  app.add_flag("--json", json,
               "print only the result JSON on stdout (progress and the report go to stderr)");
  CLI11_PARSE(app, argc, argv);

  // --json: everything human-readable to stderr, the JSON alone on the original stdout.
  int json_fd = -1;
  if (json) {
    std::fflush(stdout);
    json_fd = ::dup(STDOUT_FILENO);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  try {
    const auto start = clock_type::now();
    const fs::path run(run_dir);
    if (!fs::is_directory(run))
      throw std::runtime_error("run directory " + run_dir + " does not exist");
    const auto config_path = run / "config.toml";
    if (!fs::is_regular_file(config_path))
      throw std::runtime_error(config_path.string() +
                               " does not exist: not a run directory of train_wordlm?");
    auto config = sb::lm::load_config_file(config_path.string());
    if (!data_dir.empty()) config.data = data_dir;
    sb::lm::validate(config);
    const auto weights_file = weights_path(run, weights);
    if (out_path.empty()) out_path = (run / "dyneval.json").string();
    if (valid_tokens < 0) valid_tokens = config.valid_tokens;
    if (test_tokens < 0) test_tokens = config.test_tokens;
    if (grid && (grid_lr.empty() || grid_lambda.empty()))
      throw std::runtime_error("--grid needs at least one --grid-lr and one --grid-lambda value");
    auto options = DynamicEvalOptions()
                       .lr(lr)
                       .lambda(lambda)
                       .eps(eps)
                       .bptt(bptt)
                       .stats_batch_size(stats_batch_size)
                       .stats_bptt(stats_bptt)
                       .stats_tokens(stats_tokens);
    sb::lm::validate(options);
    for (double x : grid_lr) sb::lm::validate(DynamicEvalOptions(options).lr(x));
    for (double x : grid_lambda) sb::lm::validate(DynamicEvalOptions(options).lambda(x));

    const auto device = sb::runkit::resolve_device(device_name);
    sb::runkit::keep_freed_memory();
    const int n_threads = sb::runkit::set_threads(threads);
    const auto corpus_dir = sb::data::find_corpus_dir(config.dataset, config.data);
    auto corpus = sb::data::load_corpus(corpus_dir);
    if (config.train_tokens > 0 && static_cast<int64_t>(corpus.train.size()) > config.train_tokens)
      corpus.train.resize(static_cast<size_t>(config.train_tokens));  // what the model saw
    const auto valid = sb::lm::eos_then(corpus, corpus.valid, valid_tokens);
    const auto test = sb::lm::eos_then(corpus, corpus.test, test_tokens);
    auto model = sb::lm::make_awd_lstm(config, corpus.vocab.size());
    model->to(device);
    sb::runkit::load_weights(weights_file, *model);  // onto the model's device
    std::printf(
        "dyneval: %s, head %s, d %lld; weights %s; %s: %zu train / %zu valid / %zu test tokens; "
        "%d threads; device %s\n",
        run_dir.c_str(), config.head.c_str(), static_cast<long long>(model->d()),
        weights_file.c_str(), config.dataset.c_str(), corpus.train.size(), valid.size() - 1,
        test.size() - 1, n_threads, sb::runkit::describe_device(device).c_str());
    std::fflush(stdout);

    auto t = clock_type::now();
    const double static_valid = sb::lm::static_evaluate(model, valid, options.bptt(),
                                                        sb::runkit::timed_progress("static valid"));
    const double static_test =
        sb::lm::static_evaluate(model, test, options.bptt(), sb::runkit::timed_progress("static test"));
    std::printf("| static  | valid ppl %9.2f | test ppl %9.2f | batch 1, bptt %lld | %s\n",
                std::exp(static_valid), std::exp(static_test),
                static_cast<long long>(options.bptt()),
                sb::format_duration(seconds_since(t)).c_str());
    std::fflush(stdout);

    // The result file and, with --json, stdout: written once, at the end.
    const auto emit = [&](const nlohmann::json& result) {
      sb::runkit::write_atomically(out_path, [&](const std::string& tmp) {
        std::ofstream out(tmp);
        out << result.dump(2) << '\n';
        if (!out) throw std::runtime_error(tmp + ": cannot write");
      });
      std::printf("wrote %s (%s in all)\n", out_path.c_str(),
                  sb::format_duration(seconds_since(start)).c_str());
      std::fflush(stdout);
      if (json_fd >= 0) {
        const std::string text = result.dump(2) + "\n";
        if (::write(json_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
          throw std::runtime_error("cannot write the JSON to stdout");
      }
    };
    const nlohmann::json static_json{{"valid_loss", static_valid},
                                     {"valid_ppl", std::exp(static_valid)},
                                     {"test_loss", static_test},
                                     {"test_ppl", std::exp(static_test)},
                                     {"bptt", options.bptt()}};
    if (static_only) {
      emit({{"run", run_dir},
            {"weights", weights_file},
            {"dataset", config.dataset},
            {"head", config.head},
            {"valid_tokens", valid.size() - 1},
            {"test_tokens", test.size() - 1},
            {"static", static_json},
            {"seconds", seconds_since(start)}});
      return 0;
    }

    t = clock_type::now();
    const auto stats = sb::lm::gradient_statistics(model, corpus.train, options,
                                                   sb::runkit::timed_progress("statistics"));
    const double stats_seconds = seconds_since(t);
    std::printf(
        "gradient statistics: %lld batches of %lld x %lld, %lld training tokens, mean MS %.4g, "
        "train loss %.4f (ppl %.2f), %s\n",
        static_cast<long long>(stats.batches), static_cast<long long>(options.stats_batch_size()),
        static_cast<long long>(options.stats_bptt()), static_cast<long long>(stats.tokens),
        stats.mean_ms, stats.mean_loss, std::exp(stats.mean_loss),
        sb::format_duration(stats_seconds).c_str());
    std::fflush(stdout);

    nlohmann::json grid_json = nlohmann::json::array();
    double dynamic_valid = 0;
    if (grid) {
      t = clock_type::now();  // each point's time: from here or the previous point
      const auto search = sb::lm::grid_search(
          model, valid, stats, options, grid_lr, grid_lambda,
          [&](const sb::lm::GridPoint& p) {
            grid_json.push_back({{"lr", p.lr},
                                 {"lambda", p.lambda},
                                 {"valid_loss", p.loss},
                                 {"valid_ppl", std::exp(p.loss)}});
            std::printf("  grid lr %-8s lambda %-8s valid ppl %9.2f | %s\n", number(p.lr).c_str(),
                        number(p.lambda).c_str(), std::exp(p.loss),
                        sb::format_duration(seconds_since(t)).c_str());
            std::fflush(stdout);
            t = clock_type::now();
          },
          [](double x, double l) {
            return sb::runkit::timed_progress("lr " + number(x) + " lambda " + number(l));
          });
      print_grid(grid_lr, grid_lambda, search.points);
      options.lr(search.best.lr).lambda(search.best.lambda);
      std::printf("best on valid: lr %s, lambda %s\n", number(options.lr()).c_str(),
                  number(options.lambda()).c_str());
      dynamic_valid = search.best.loss;
    } else {
      dynamic_valid = sb::lm::dynamic_evaluate(model, valid, stats, options,
                                               sb::runkit::timed_progress("dynamic valid"));
    }
    t = clock_type::now();
    const double dynamic_test = sb::lm::dynamic_evaluate(model, test, stats, options,
                                                         sb::runkit::timed_progress("dynamic test"));
    std::printf(
        "| dynamic | valid ppl %9.2f | test ppl %9.2f | lr %s, lambda %s, eps %s, bptt %lld\n",
        std::exp(dynamic_valid), std::exp(dynamic_test), number(options.lr()).c_str(),
        number(options.lambda()).c_str(), number(options.eps()).c_str(),
        static_cast<long long>(options.bptt()));

    nlohmann::json result{{"run", run_dir},
                          {"weights", weights_file},
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
                          {"dynamic",
                           {{"valid_loss", dynamic_valid},
                            {"valid_ppl", std::exp(dynamic_valid)},
                            {"test_loss", dynamic_test},
                            {"test_ppl", std::exp(dynamic_test)}}},
                          {"seconds", seconds_since(start)}};
    if (grid) result["grid"] = grid_json;
    emit(result);
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
