#pragma once
// The image classifier's configuration (train_classifier): one struct and its key table over
// runkit's engine (trainers/runkit/config_table.h): a flat TOML file and --<key> VALUE overrides.
// Precedence: command line > --config file > the defaults below (de Brebisson & Vincent 2016,
// sec. 4.1: the MNIST conv net, batch 200, Nesterov momentum 0.9, lr halved after 5 epochs
// without improvement, early stopping on the validation split). LibTorch-free.

#include <cstdint>
#include <string>

#include "common/head_setting.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::classifier {

struct ClassifierConfig {
  // data
  std::string dataset = "fashion-mnist";  // fashion-mnist (Debian package) | mnist (--data DIR)
  std::string data = "";                  // directory of the four IDX files; "" = the package's
  std::string split = "random";           // random: seeded train/valid/test draw from all 70000
                                          // images (paper Table 1); official: train/t10k (Table 2)
  int64_t train_size = 0;                 // training images (0 = every image left)
  int64_t valid_size = 10000;             // validation images
  int64_t test_size = 10000;              // test images (official: the first N of t10k)
  // model
  HeadSetting head{{"mse"}};   // softmax; registry spelling (common/head_setting.h) or "mse"
  int64_t conv1 = 30;          // feature maps of the first conv-pool layer
  int64_t conv2 = 60;          // feature maps of the second
  int64_t fc = 500;            // units of the fully connected layer = d
  double output_init_std = 0;  // std of the output layer's initial weights (0 = zeros)
  // training
  double lr = 0.01;
  double momentum = 0.9;  // Nesterov
  int64_t batch_size = 200;
  int64_t eval_batch_size = 1000;
  int64_t epochs = 100;       // at most
  int64_t patience = 5;       // halve lr after this many epochs without validation improvement
  int64_t early_stop = 15;    // stop after this many epochs without improvement (0 = never)
  int64_t seed = 1;           // initial weights, shuffling and the random split
  int64_t threads = 0;        // 0 = number of cores
  int64_t log_interval = 50;  // progress line every N batches
  // outputs
  std::string out = "";   // run directory; "" = results/<dataset>_<head>
  bool dump_test = true;  // write the test set's log-outputs (T, 10) to <out>/logprobs.h5
};

/// The key table in four sections: data, model, training, outputs.
const runkit::ConfigTable<ClassifierConfig>& key_table();

/// Ranges and cross-key rules: dataset and split names, the head (HeadSpec::parse or "mse";
/// sparse needs k <= 10), output_init_std > 0 for heads whose gradient vanishes at zero logits
/// (spherical, softmax_abs). Throws sb::OptionError (a range, the head's spelling) or
/// sb::InputError (file "", field the key: a cross-key rule) naming the key and the value.
void validate(const ClassifierConfig& cfg);

/// train_classifier's descriptor (--describe): one stage, classify, that trains, tests the best
/// model and dumps; its own head mse besides the registry heads.
const runkit::TrainerDescriptor<ClassifierConfig>& descriptor();

/// True for "mse": squared error on the one-hot target over the linear outputs (paper sec. 1),
/// no probabilities.
inline bool is_mse(const ClassifierConfig& cfg) { return cfg.head.is_own(); }

using ConfigArgs = runkit::ConfigArgs;

/// --config FILE and --<key> VALUE for every key (applied by resolve_config, after the file).
void add_config_options(CLI::App& app, ConfigArgs& args);

/// Defaults, the file, the overrides, validate().
ClassifierConfig resolve_config(const ConfigArgs& args);

}  // namespace sb::classifier
