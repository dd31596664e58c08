#pragma once
// The word-level LM trainer's configuration: one struct and its key table over runkit's engine
// (trainers/runkit/config_table.h: TOML files, command-line overrides, ranges, trajectory keys).
// Precedence: --<key> on the command line > the --config file > the defaults below (the paper's
// PTB settings). LibTorch-free: target lm_config.
//
// A main does:
//   CLI::App app{"..."};
//   sb::lm::ConfigArgs args;
//   sb::lm::add_config_options(app, args);
//   CLI11_PARSE(app, argc, argv);
//   const sb::lm::WordLmConfig cfg = sb::lm::resolve_config(args);  // file, overrides, validate

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/head_setting.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::lm {

/// Every setting of a word-level run. The names mirror AWD-LSTM's command-line arguments; the
/// defaults are the paper's PTB settings (docs/protocol.md, "AWD-LSTM training").
/// The key table (config_keys()) carries these comments as descriptions for files and --help.
struct WordLmConfig {
  // data
  std::string dataset = "ptb";  // corpus name: ptb | wikitext-2 (finds the data; names outputs)
  std::string data = "";        // corpus directory; "" = search datasets/, ../shared/datasets
  int64_t train_tokens = 0;     // use only the first N training tokens (0 = all)
  int64_t valid_tokens = 0;     // same for validation (0 = all)
  int64_t test_tokens = 0;      // same for the test split (0 = all)
  // "train": the corpus' splits as they are. "valid": the proxy for a corpus whose training split
  // is absent (WikiText-2 with only valid and test): trains on the validation split's first nine
  // tenths, validates on its last tenth, tests on test (datasets/corpus.h, load_proxy_corpus).
  std::string train_split = "train";
  // > 0: pads the vocabulary with never-seen placeholder words up to this size, so the test dump
  // has a larger corpus' M (the WikiText-2 proxy at the paper's 33278); 0 = the corpus' own.
  int64_t vocab_size = 0;
  // model (AWD-LSTM, Merity et al. 2018)
  HeadSetting head;      // softmax; output head, registry spelling ("mos:K=15", "sparse:k=20")
  int64_t emsize = 400;  // embedding size = d (tied decoder input size)
  int64_t nhid = 1150;   // hidden units of the inner LSTM layers
  int64_t nhidlast = 0;  // units of the last LSTM layer; 0 = emsize
  int64_t nlayers = 3;
  double dropout = 0.4;     // locked dropout on the last layer's output
  double dropouth = 0.25;   // locked dropout between LSTM layers
  double dropouti = 0.4;    // locked dropout on the word vectors
  double dropoute = 0.1;    // embedding dropout (whole words)
  double wdrop = 0.5;       // DropConnect on hidden-to-hidden weights
  double dropoutl = 0.29;   // MoS/MoSS latent (context vector) dropout
  bool latent_bias = true;  // MoS/MoSS: bias of the latent projection (Yang et al.'s code)
  bool fused_lstm = false;  // CPU: each LSTM layer's window as one autograd node (fused_lstm.h)
  // The decoder bias at the start: "zero" (AWD-LSTM's code, the paper), "unigram" (the bias b
  // with head(b) = the training unigram, heads/unigram_bias.h; single finite heads only) or
  // "uniform" (b = -log M: g:sigmoid then starts with every sigmoid(b) ~ 1/M, a uniform
  // distribution whose normaliser is ~1 instead of M / 2; for softmax a constant shift).
  std::string bias_init = "zero";
  // training
  int64_t batch_size = 20;
  int64_t eval_batch_size = 10;
  // (The test-set dump always runs with batch size 1, as the paper.)
  int64_t bptt = 70;
  double lr = 30;
  // The main phase's lr divided by lr_decay once per epoch after epoch lr_decay_after (1 = off):
  // epoch e trains with lr / lr_decay^max(0, e - lr_decay_after). K18-S E (One Billion Word):
  // lr 20 halved every epoch after the second, i.e. lr_decay = 2, lr_decay_after = 2.
  double lr_decay = 1;
  int64_t lr_decay_after = 0;
  double clip = 0.25;
  double wdecay = 1.2e-6;
  double alpha = 2;               // activation regularisation
  double beta = 1;                // temporal activation regularisation
  int64_t nonmono = 5;            // NT-ASGD non-monotone interval
  int64_t epochs = 1000;          // max epochs of the main phase
  int64_t finetune_epochs = 500;  // max epochs of finetuning (0 = skip finetuning)
  int64_t max_batches = 0;        // stop an epoch after N batches (0 = whole epoch)
  int64_t seed = 141;
  int64_t threads = 0;          // 0 = number of cores
  std::string device = "auto";  // auto | cpu | cuda | cuda:N (auto: cuda when available)
  int64_t log_interval = 200;   // progress line every N batches
  // outputs
  std::string out = "";          // run directory; "" = results/<dataset>_<head>
  bool dump_test = true;         // write the test-set log-output HDF5 file after training
  int64_t epoch_dump_rows = 0;   // after every epoch: the first N test rows to epochs/
  int64_t mixture_stats = 2000;  // MoS/MoSS: prior entropy, expert disagreement per epoch
};

/// The defaults above (the paper's PTB settings): the one place other option structs
/// (AwdLstmOptions) take their defaults from.
const WordLmConfig& paper_defaults();

/// One row of the key table (runkit's engine, trainers/runkit/config_table.h): name, group,
/// type, default_text, description, range, trajectory flag, and value_text(cfg).
using ConfigKey = runkit::ConfigKey<WordLmConfig>;

/// The key table: every key in the order of WordLmConfig, in four sections (data, model,
/// training, outputs). The only list of keys.
const runkit::ConfigTable<WordLmConfig>& key_table();

/// The table's rows.
const std::vector<ConfigKey>& config_keys();

/// The row of `name`, or nullptr.
const ConfigKey* find_config_key(const std::string& name);

/// Comma-separated names of every key, for error messages.
std::string config_key_list();

/// Reads a flat TOML file (top-level `key = value` lines, comments allowed) over `base`.
/// Integers are accepted for number keys; a float for an integer key is an error. Throws
/// sb::FormatError (unreadable, not TOML) or sb::InputError (a key or its value), one line each:
///   "<path>: cannot read (...)", "<path>:<line>:<col>: <toml++'s description>",
///   "<path>:<line>:<col>: unknown key 'nhidd' (valid keys: dataset, data, ...)",
///   "<path>:<line>:<col>: key 'lr': expected a number, got \"x\"".
/// Does not validate ranges (see validate()).
WordLmConfig load_config_file(const std::string& path, WordLmConfig base = {});

/// Sets `key` from command-line text: integers and numbers must be the whole text (numbers
/// finite), booleans true/false/1/0, strings taken as-is. Throws sb::OptionError
/// "--<key>: expected an integer, got 'abc'" or "unknown option '--<key>' (valid keys: ...)".
void apply_override(WordLmConfig& cfg, const std::string& key, const std::string& value);

/// Checks every range of the key table and the cross-key rules (dataset non-empty; head parses
/// with sb::HeadSpec::parse; a single head needs nhidlast == 0 or nhidlast == emsize; device is
/// auto, cpu, cuda or cuda:N). Throws sb::OptionError (a range, the head's spelling) or
/// sb::InputError (file "", field the key: a cross-key rule) naming the key, the allowed range and
/// the actual value.
void validate(const WordLmConfig& cfg);

/// train_wordlm's descriptor (--describe): stages train, finetune, dump, each `--until STAGE` of
/// one resumable command; epoch dumps; its runs are scored and dynamically evaluated by dyneval.
/// key_table().to_toml is config.toml (every key, with its description; round-trips through
/// load_text), key_table().trajectory_toml the keys a resumed run compares (all but epochs,
/// finetune_epochs, log_interval, out, data, dump_test, device, epoch_dump_rows, mixture_stats).
const runkit::TrainerDescriptor<WordLmConfig>& descriptor();

/// What the command line says about the configuration (--config FILE, --<key> VALUE pairs);
/// filled by add_config_options.
using ConfigArgs = runkit::ConfigArgs;

/// Registers --config FILE and --<key> VALUE for every key of the table. The help lists each key
/// with its type, default, description and range, grouped (and widens the app's help column).
/// Values are checked for their type while parsing (CLI::ValidationError) but applied only by
/// resolve_config, after the file, so the command line beats the file whatever the order of the
/// options.
void add_config_options(CLI::App& app, ConfigArgs& args);

/// Defaults, then the file (if `config_path` is not empty), then the overrides in order, then
/// validate(). Throws what load_config_file, apply_override and validate throw.
WordLmConfig resolve_config(const std::string& config_path,
                            const std::vector<std::pair<std::string, std::string>>& overrides);
WordLmConfig resolve_config(const ConfigArgs& args);

}  // namespace sb::lm
