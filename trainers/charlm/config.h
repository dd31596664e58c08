#pragma once
// train_charlm's configuration (a key table over runkit/config_table.h): the character-level LSTM
// LM of Kanai et al. 2018, supplementary D.1 (text8 there: one layer of 1024 units, Adam with lr
// 0.001, batch 100, BPTT 200). Here on PTB characters (char_corpus.h), and the defaults are the
// paper's except the size, which a profile scales down.

#include <cstdint>
#include <string>

#include "common/head_setting.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::charlm {

struct CharConfig {
  // data
  std::string dataset = "ptb";  // word corpus the characters are spelled from
  std::string data = "";        // corpus directory; "" = search datasets/, ../shared/datasets
  int64_t train_chars = 0;      // use only the first N training symbols (0 = all)
  int64_t valid_chars = 0;      // same for validation
  int64_t test_chars = 0;       // same for test
  // model
  HeadSetting head;     // softmax; output head (registry spelling); no mixtures, no sparse
  int64_t emsize = 64;  // character embedding size
  int64_t nhid = 1024;  // LSTM units = d (paper: 1024)
  int64_t nlayers = 1;  // paper: 1
  int64_t latent = 0;   // d: a linear map nhid -> latent (0 = none, d = nhid)
  // training
  int64_t batch_size = 100;  // paper: 100
  int64_t eval_batch_size = 10;
  int64_t bptt = 200;  // paper: 200
  double lr = 0.001;   // Adam (paper: 0.001)
  double clip = 0;     // gradient norm clipping (0 = none)
  int64_t epochs = 10;
  int64_t max_batches = 0;  // stop an epoch after N batches (0 = whole epoch)
  int64_t seed = 141;
  int64_t threads = 0;         // 0 = number of cores
  int64_t log_interval = 100;  // progress line every N batches
  // outputs
  std::string out = "";  // run directory; "" = results/char_<dataset>_<head>
};

/// The key table: data, model, training (with runkit/epoch_keys.h's rows), outputs.
const runkit::ConfigTable<CharConfig>& key_table();

/// Ranges, and the head: a single head with finite log-outputs.
void validate(const CharConfig& c);

/// train_charlm's descriptor (--describe): one stage, train, that also evaluates and dumps.
const runkit::TrainerDescriptor<CharConfig>& descriptor();

}  // namespace sb::charlm
