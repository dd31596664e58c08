#pragma once
// train_nplm's configuration (a key table over runkit/config_table.h): Bengio et al.'s feed-forward
// neural LM as de Brebisson & Vincent (2016, sec. 4.4.1) train it on PTB. Defaults: their setting
// where the paper gives it (6-word context, embeddings of 250, ReLU hidden layers, plain SGD on
// batches of 250); the layer sizes were tuned per head in the paper (softmax: 2 x 809, spherical: 3
// x 1264, Taylor: 3 x 1427) and the learning rate is not given.

#include <cstdint>
#include <string>

#include "common/head_setting.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::nplm {

struct NplmConfig {
  // data
  std::string dataset = "ptb";  // corpus name (finds the data; names the outputs)
  std::string data = "";        // corpus directory; "" = search datasets/, ../shared/datasets
  int64_t train_tokens = 0;     // use only the first N training tokens (0 = all)
  int64_t valid_tokens = 0;     // same for validation
  int64_t test_tokens = 0;      // same for test
  // model
  HeadSetting head;      // softmax; output head (registry spelling); no mixtures; sparse: classes
  int64_t classes = 0;   // 0 = the LM; C = predict only the C most frequent words
  int64_t context = 6;   // words of context (paper: 6)
  int64_t emsize = 250;  // word embedding size (paper: 250)
  int64_t layers = 2;    // ReLU hidden layers (paper: 2 for softmax, 3 for spherical)
  int64_t hidden = 809;  // units per hidden layer = d (paper's softmax: 809)
  // training
  int64_t batch_size = 250;  // paper: 250
  double lr = 0.1;           // plain SGD learning rate (not given in the paper)
  double lr_decay = 0.5;     // multiply lr by this after an epoch without a better valid loss
  double clip = 0;           // gradient norm clipping (0 = none, as the paper)
  int64_t epochs = 7;        // paper: 6-7 epochs at its best
  int64_t max_batches = 0;   // stop an epoch after N batches (0 = whole epoch)
  int64_t seed = 141;
  int64_t threads = 0;         // 0 = number of cores
  int64_t log_interval = 500;  // progress line every N batches
  // outputs
  std::string out = "";   // run directory; "" = results/nplm_<dataset>_<head>
  int64_t dump_rows = 0;  // test rows written to logprobs.h5 (0 = every test token)
};

/// The key table: data, model, training (with runkit/epoch_keys.h's rows), outputs.
const runkit::ConfigTable<NplmConfig>& key_table();

/// Cross-key checks beyond the ranges: the head parses and is a single, everywhere-finite head.
void validate(const NplmConfig& c);

/// train_nplm's descriptor (--describe): one stage, train, that also evaluates and dumps.
const runkit::TrainerDescriptor<NplmConfig>& descriptor();

}  // namespace sb::nplm
