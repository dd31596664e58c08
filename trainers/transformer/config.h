#pragma once
// train_transformer's configuration (a key table over runkit/config_table.h): a decoder-only
// Transformer LM (GPT-2's shape, Radford et al. 2019: pre-LayerNorm blocks, learned positions, a
// final normalisation, the decoder tied to the embedding) with any output head of trainers/heads,
// trained with AdamW (Loshchilov & Hutter 2019), linear warmup and cosine decay. Defaults: a small
// model for PTB on CPU; a profile sets the size (pipeline/profiles/transformer.toml).

#include <cstdint>
#include <string>

#include "common/head_setting.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::transformer {

struct TransformerConfig {
  // data
  std::string dataset = "ptb";  // corpus name (finds the data; names the outputs)
  std::string data = "";        // corpus directory; "" = search datasets/, ../shared/datasets
  int64_t train_tokens = 0;     // use only the first N training tokens (0 = all)
  int64_t valid_tokens = 0;     // same for validation
  int64_t test_tokens = 0;      // same for test
  // model
  HeadSetting head;       // softmax; output head (registry spelling); mixtures allowed
  int64_t d_model = 128;  // d: the residual width, the decoder's input size
  int64_t layers = 2;     // Transformer blocks
  int64_t heads = 4;      // attention heads (d_model must divide by it)
  int64_t d_ff = 0;       // MLP width (0 = 4 d_model)
  int64_t context = 64;   // tokens of context (the attention window)
  double dropout = 0.1;   // on attention weights, residual branches, embeddings
  std::string final_norm = "layernorm";  // before the decoder: layernorm | rmsnorm | none
  bool decoder_bias = true;              // the tied decoder's bias (M)
  // training
  int64_t batch_size = 32;
  double lr = 1e-3;             // AdamW peak learning rate
  double weight_decay = 0.1;    // AdamW's decoupled decay, on matrices and embeddings only
  int64_t warmup = 200;         // linear warmup steps
  double final_lr_ratio = 0.1;  // cosine decay from lr to final_lr_ratio x lr at the last step
  double clip = 1.0;            // gradient norm clipping (0 = none)
  int64_t epochs = 5;
  int64_t max_batches = 0;  // stop an epoch after N batches (0 = whole epoch)
  int64_t seed = 141;
  int64_t threads = 0;         // 0 = number of cores
  int64_t log_interval = 100;  // progress line every N batches
  // outputs
  std::string out = "";   // run directory; "" = results/transformer_<dataset>_<head>
  int64_t dump_rows = 0;  // test rows written to logprobs.h5 (0 = every test token)
};

/// The key table: data, model, training (with runkit/epoch_keys.h's rows), outputs.
const runkit::ConfigTable<TransformerConfig>& key_table();

/// Ranges and cross-key checks: a head with finite log-outputs (mixtures too), heads divides
/// d_model, final_norm is one of the three.
void validate(const TransformerConfig& c);

/// train_transformer's descriptor (--describe): one stage, train, that also evaluates and dumps.
const runkit::TrainerDescriptor<TransformerConfig>& descriptor();

}  // namespace sb::transformer
