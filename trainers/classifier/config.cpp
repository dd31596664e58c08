#include "trainers/classifier/config.h"

#include <CLI/CLI.hpp>

#include "common/errors.h"
#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"
#include "trainers/runkit/trainer_rules.h"

namespace sb::classifier {

using runkit::at_least;  // the key table's rows (trainers/runkit/config_table.h)
using runkit::key;

namespace {

// What the pipeline and --describe know of train_classifier (its descriptor() ends this file).
runkit::TrainerFacts facts() {
  runkit::TrainerFacts f = runkit::one_command_facts(
      "classifier", "",
      "the MNIST conv net of de Brebisson & Vincent 2016 (sec. 4.1) over any head or mse, on "
      "(Fashion-)MNIST",
      "Train the MNIST conv net of de Brebisson & Vincent (2016, sec. 4.1) with any output head "
      "(or mse) on Fashion-MNIST (Debian package dataset-fashion-mnist) or MNIST (--data DIR): "
      "Nesterov momentum, lr halved after `patience` epochs without validation improvement, "
      "early stopping; then the best model on the test split.\n"
      "Settings: the defaults (the paper's), then --config FILE (TOML, the keys below), then "
      "--<key> VALUE. Outputs in --out: config.toml, metrics.jsonl, checkpoint.pt, best.pt, "
      "final.json (test error %, test NLL, test loss), logprobs.h5 (the test set's log-outputs, "
      "T x 10, for rank_analysis; not for mse).");
  f.stages = {"classify"};  // trains, tests the best model and dumps in one command
  f.own_heads = {"mse"};
  return f;
}

}  // namespace

const runkit::ConfigTable<ClassifierConfig>& key_table() {
  using C = ClassifierConfig;
  static const runkit::ConfigTable<C> table(
      "Image classifier configuration (trainers/classifier/config.h)",
      {
          {"data",
           {
               key("dataset", &C::dataset,
                   "fashion-mnist (Debian package dataset-fashion-mnist) | mnist (needs data = "
                   "DIR)"),
               key("data", &C::data,
                   "directory of the four IDX files (plain or .gz); \"\" = the package's "
                   "directory")
                   .not_trajectory(),
               key("split", &C::split,
                   "random: a seeded draw of train/valid/test from all 70000 images (paper Table "
                   "1); official: the train/t10k files, valid drawn from train (Table 2)"),
               key("train_size", &C::train_size, "training images (0 = every image left)",
                   at_least(0)),
               key("valid_size", &C::valid_size, "validation images", at_least(1)),
               key("test_size", &C::test_size, "test images (official split: the first N of t10k)",
                   at_least(1)),
           }},
          {"model",
           {
               runkit::head_key<C>("mse (squared error on the one-hot target)"),
               key("conv1", &C::conv1, "feature maps of the first 5x5 conv-pool layer",
                   at_least(1)),
               key("conv2", &C::conv2, "feature maps of the second 5x5 conv-pool layer",
                   at_least(1)),
               key("fc", &C::fc, "units of the fully connected layer = d of the output layer",
                   at_least(1)),
               key("output_init_std", &C::output_init_std,
                   "std of the output layer's initial weights; 0 = zeros, as the paper",
                   at_least(0)),
           }},
          {"training",
           {
               key("lr", &C::lr, "initial learning rate", runkit::above(0)),
               key("momentum", &C::momentum, "Nesterov momentum",
                   runkit::interval(0, /*lo_open=*/false, 1, /*hi_open=*/true)),
               key("batch_size", &C::batch_size, "training batch size", at_least(1)),
               key("eval_batch_size", &C::eval_batch_size, "evaluation batch size", at_least(1)),
               key("epochs", &C::epochs, "maximum number of epochs", at_least(1)).not_trajectory(),
               key("patience", &C::patience,
                   "halve lr after this many epochs without validation improvement", at_least(1)),
               key("early_stop", &C::early_stop,
                   "stop after this many epochs without validation improvement (0 = never)",
                   at_least(0)),
               key("seed", &C::seed, "seed of the initial weights, shuffling and the split",
                   at_least(0)),
               key("threads", &C::threads, "threads (0 = number of cores)", at_least(0)),
               key("log_interval", &C::log_interval, "progress line every N batches", at_least(1))
                   .not_trajectory(),
           }},
          {"outputs",
           {
               runkit::out_key<C>("results/<dataset>_<head>"),
               key("dump_test", &C::dump_test,
                   "write the test set's log-outputs to <out>/logprobs.h5 (not for mse)")
                   .not_trajectory(),
           }},
      },
      runkit::TableOptions{"trainers/configs/classify_fashion.toml"});
  return table;
}

void validate(const ClassifierConfig& cfg) {
  key_table().check_ranges(cfg);
  if (cfg.dataset != "fashion-mnist" && cfg.dataset != "mnist")
    throw InputError::described(
        "", "dataset", "dataset must be fashion-mnist or mnist, got \"" + cfg.dataset + "\"");
  if (cfg.split != "random" && cfg.split != "official")
    throw InputError::described("", "split",
                                "split must be random or official, got \"" + cfg.split + "\"");
  if (is_mse(cfg)) return;
  const HeadSpec& spec = cfg.head.spec();
  if (is_adaptive(spec))
    throw InputError::described(
        "", "head",
        "head = \"" + cfg.head.text() +
            "\": the adaptive heads need a frequency-sorted vocabulary; they "
            "train in train_wordlm");
  if (spec.kind == HeadKind::sparse && spec.k > 10)
    throw InputError::described("", "head",
                                "head = \"" + cfg.head.text() +
                                    "\": k must be <= 10 classes, got " + std::to_string(spec.k));
  // At z = 0 the gradient of log spherical (z^2 + eps) and of log softmax(|z|) with respect to z
  // is zero (d z^2 / dz = 0; torch's d|z|/dz = sign(0) = 0): a zero output layer would never move.
  if ((spec.kind == HeadKind::spherical || spec.kind == HeadKind::softmax_abs) &&
      cfg.output_init_std == 0)
    throw InputError::described("", "output_init_std",
                                "head = \"" + cfg.head.text() +
                                    "\" with output_init_std = 0: the head's gradient vanishes at "
                                    "zero logits, so a zero output layer never trains; set "
                                    "output_init_std > 0 (e.g. 0.01)");
}

const runkit::TrainerDescriptor<ClassifierConfig>& descriptor() {
  static const runkit::TrainerDescriptor<ClassifierConfig> d{facts(), &key_table, &validate};
  return d;
}

void add_config_options(CLI::App& app, ConfigArgs& args) { key_table().add_options(app, args); }

ClassifierConfig resolve_config(const ConfigArgs& args) {
  ClassifierConfig cfg = key_table().resolve(args);
  validate(cfg);
  return cfg;
}

}  // namespace sb::classifier
