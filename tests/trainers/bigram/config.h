#pragma once
// The toy fifth trainer's configuration (a key table over runkit/config_table.h): a bigram
// language model, p(w_t | w_{t-1}) = head(decoder(embedding(w_{t-1}))), over the first tokens of
// PTB. It exists to show (and test) that a trainer is one folder and one registry row
// (docs/design.md, "Adding a trainer"); it reproduces no paper.

#include <cstdint>
#include <string>

#include "common/head_setting.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::bigram {

struct BigramConfig {
  // data
  std::string dataset = "ptb";  // corpus name (finds the data; names the outputs)
  std::string data = "";        // corpus directory; "" = search datasets/, ../shared/datasets
  int64_t train_tokens = 20000;
  int64_t valid_tokens = 5000;
  int64_t test_tokens = 2000;
  // model
  HeadSetting head;  // softmax; output head (registry spelling); single heads only
  int64_t d = 16;    // embedding size = d, the decoder's input size
  // training
  int64_t batch_size = 100;
  double lr = 0.5;  // plain SGD
  double clip = 0;
  int64_t epochs = 2;
  int64_t max_batches = 0;
  int64_t seed = 141;
  int64_t threads = 0;
  int64_t log_interval = 50;
  // outputs
  std::string out = "";
};

/// The key table: data, model, training (runkit/epoch_keys.h's rows), outputs.
const runkit::ConfigTable<BigramConfig>& key_table();

/// Ranges, and the head: a single head with finite log-outputs (no mixture, no adaptive head).
void validate(const BigramConfig& c);

/// train_bigram's descriptor (--describe): one stage, train, that trains, evaluates and dumps.
const runkit::TrainerDescriptor<BigramConfig>& descriptor();

}  // namespace sb::bigram
