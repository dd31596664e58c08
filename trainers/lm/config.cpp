#include "trainers/lm/config.h"

#include <utility>

#include "common/device_name.h"
#include "common/errors.h"
#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"
#include "trainers/runkit/trainer_rules.h"

namespace sb::lm {

using runkit::at_least;  // the key table's rows (trainers/runkit/config_table.h)
using runkit::key;

namespace {

// What the pipeline and --describe know of train_wordlm (its descriptor() ends this file).
runkit::TrainerFacts facts() {
  runkit::TrainerFacts f;
  f.kind = "wordlm";
  f.summary =
      "AWD-LSTM word-level LM with any output head (Kanai et al. 2018, Tables 1-3): train "
      "(SGD -> NT-ASGD), finetune, dump";
  f.help =
      "Train an AWD-LSTM language model (Merity et al. 2018) with any output head, finetune it, "
      "and write the test set's log-output matrix to <out>/logprobs.h5.\n"
      "Settings come from the defaults (the paper's PTB values), then --config FILE (TOML, the "
      "keys below), then --<key> VALUE on the command line. Outputs: <out>/config.toml, "
      "metrics.jsonl, checkpoint.pt, best.pt, best_finetune.pt, logprobs.h5, final.json.";
  f.stages = {"train", "finetune", "dump"};
  f.until = true;
  f.epoch_dumps = true;
  f.dyneval = true;
  // finetune restarts from best.pt and the checkpoint; the dump reads the checkpoint and
  // best_finetune.pt (finetune_epochs = 0: best.pt).
  f.hands_on = {{"train", {"checkpoint.pt", "best.pt"}},
                {"finetune", {"checkpoint.pt", "best_finetune.pt"}}};
  f.best_weights = "best_finetune.pt";
  f.outputs = {"config.toml",      "metrics.jsonl", "checkpoint.pt", "best.pt",
               "best_finetune.pt", "logprobs.h5",   "final.json"};
  return f;
}

}  // namespace

const WordLmConfig& paper_defaults() {
  static const WordLmConfig defaults{};
  return defaults;
}

namespace {

// The corpus keys every trainer has, and the word LM's own two: the proxy split and the padding.
std::vector<runkit::ConfigKey<WordLmConfig>> data_keys() {
  using C = WordLmConfig;
  auto keys =
      runkit::corpus_keys<C>("corpus name: ptb | wikitext-2 (finds the data; names the outputs)");
  keys.push_back(key("train_split", &C::train_split,
                     "\"train\"; \"valid\" = the proxy for an absent training split: train on "
                     "valid's first nine tenths, validate on its last tenth"));
  keys.push_back(key("vocab_size", &C::vocab_size,
                     "pad the vocabulary with never-seen placeholder words to this size (0 = "
                     "the corpus' own)",
                     at_least(0)));
  return keys;
}

// The network: the head, the sizes, the dropouts (AWD-LSTM, Merity et al. 2018).
std::vector<runkit::ConfigKey<WordLmConfig>> model_keys() {
  using C = WordLmConfig;
  const auto probability = runkit::interval(0, /*lo_open=*/false, 1, /*hi_open=*/true);
  return {runkit::head_key<C>(),
          key("emsize", &C::emsize, "embedding size = d (tied decoder input size)", at_least(1)),
          key("nhid", &C::nhid, "hidden units of the inner LSTM layers", at_least(1)),
          key("nhidlast", &C::nhidlast,
              "units of the last LSTM layer; 0 = emsize (single heads need emsize)", at_least(0)),
          key("nlayers", &C::nlayers, "number of LSTM layers", at_least(1)),
          key("dropout", &C::dropout, "locked dropout on the last layer's output", probability),
          key("dropouth", &C::dropouth, "locked dropout between LSTM layers", probability),
          key("dropouti", &C::dropouti, "locked dropout on the word vectors", probability),
          key("dropoute", &C::dropoute, "embedding dropout (whole words)", probability),
          key("wdrop", &C::wdrop, "DropConnect on the hidden-to-hidden weights", probability),
          key("dropoutl", &C::dropoutl, "MoS/MoSS latent (context vector) dropout", probability),
          key("latent_bias", &C::latent_bias,
              "MoS/MoSS: contexts tanh(W_h h + b_h) as Yang et al.'s code; false: "
              "tanh(W_h h)"),
          key("fused_lstm", &C::fused_lstm,
              "CPU: each LSTM layer's window as one autograd node (trainers/lm/fused_lstm.h), "
              "the same function as at::lstm to float rounding; false: at::lstm (the committed "
              "results)")};
}

// The optimisation: batches, BPTT, lr and its schedule, regularisers, epochs, seed, threads.
std::vector<runkit::ConfigKey<WordLmConfig>> training_keys() {
  using C = WordLmConfig;
  return {key("batch_size", &C::batch_size, "training batch size", at_least(1)),
          key("eval_batch_size", &C::eval_batch_size, "validation batch size", at_least(1)),
          key("bptt", &C::bptt, "base sequence length of truncated BPTT", at_least(1)),
          key("lr", &C::lr, "SGD / ASGD learning rate", runkit::above(0)),
          key("lr_decay", &C::lr_decay,
              "divide the main phase's lr by this once per epoch after epoch "
              "lr_decay_after (1 = constant lr)",
              at_least(1)),
          key("lr_decay_after", &C::lr_decay_after,
              "the last main-phase epoch at the full lr when lr_decay > 1", at_least(0)),
          key("clip", &C::clip, "gradient norm clipping (0 = no clipping)", at_least(0)),
          key("wdecay", &C::wdecay, "weight decay", at_least(0)),
          key("alpha", &C::alpha, "activation regularisation (AR)", at_least(0)),
          key("beta", &C::beta, "temporal activation regularisation (TAR)", at_least(0)),
          key("nonmono", &C::nonmono, "NT-ASGD non-monotone interval", at_least(1)),
          key("epochs", &C::epochs, "max epochs of the main phase", at_least(1)).not_trajectory(),
          key("finetune_epochs", &C::finetune_epochs,
              "max epochs of finetuning (0 = skip finetuning)", at_least(0))
              .not_trajectory(),
          key("max_batches", &C::max_batches,
              "stop an epoch after N batches (0 = whole epoch); scaled-down runs", at_least(0)),
          key("seed", &C::seed, "random seed", at_least(0)),
          key("threads", &C::threads, "threads (0 = number of cores)", at_least(0)),
          key("bias_init", &C::bias_init,
              "the decoder bias at the start: zero (the paper's code), unigram (head(b) = "
              "the training unigram; single finite heads) or uniform (b = -log M)"),
          key("device", &C::device,
              "auto | cpu | cuda | cuda:N (auto = cuda when LibTorch has it and a GPU is "
              "visible)")
              .not_trajectory(),
          key("log_interval", &C::log_interval, "progress line every N batches", at_least(1))
              .not_trajectory()};
}

// What a run writes besides its model: the run directory, the dumps, the mixture statistics.
std::vector<runkit::ConfigKey<WordLmConfig>> output_keys() {
  using C = WordLmConfig;
  return {runkit::out_key<C>("results/<dataset>_<head>"),
          key("dump_test", &C::dump_test, "write the test-set log-output HDF5 file after training")
              .not_trajectory(),
          key("epoch_dump_rows", &C::epoch_dump_rows,
              "after every epoch (main and finetuning), write the first N test rows (batch "
              "size 1, the weights just validated) to <out>/epochs/<phase>_<epoch>.h5 (0 = "
              "off)",
              at_least(0))
              .not_trajectory(),
          key("mixture_stats", &C::mixture_stats,
              "MoS/MoSS: after every epoch, the prior's entropies and the experts' "
              "disagreement on N positions at the start of the validation split, to "
              "metrics.jsonl (0 = off)",
              at_least(0))
              .not_trajectory()};
}

}  // namespace

const runkit::ConfigTable<WordLmConfig>& key_table() {
  static const runkit::ConfigTable<WordLmConfig> table(
      "Word-level LM configuration (trainers/lm/config.h)",
      {
          {"data", data_keys()},
          {"model", model_keys()},
          {"training", training_keys()},
          {"outputs", output_keys()},
      },
      runkit::TableOptions{"trainers/configs/ptb_smoke.toml"});
  return table;
}

const std::vector<ConfigKey>& config_keys() { return key_table().keys(); }

const ConfigKey* find_config_key(const std::string& name) { return key_table().find(name); }

std::string config_key_list() { return key_table().key_list(); }

WordLmConfig load_config_file(const std::string& path, WordLmConfig base) {
  return key_table().load_file(path, std::move(base));
}

void apply_override(WordLmConfig& cfg, const std::string& key, const std::string& value) {
  key_table().apply(cfg, key, value);
}

void validate(const WordLmConfig& cfg) {
  key_table().check_ranges(cfg);
  if (cfg.dataset.empty())
    throw InputError::described("", "dataset",
                                "dataset must not be empty (e.g. \"ptb\" or \"wikitext-2\")");
  if (cfg.train_split != "train" && cfg.train_split != "valid")
    throw InputError::described(
        "", "train_split", "train_split must be train or valid, got \"" + cfg.train_split + "\"");
  if (!is_device_name(cfg.device))
    throw InputError::described(
        "", "device", "device must be auto, cpu, cuda or cuda:N, got \"" + cfg.device + "\"");

  const HeadSpec& spec = cfg.head.spec();
  const bool mixture = is_mixture(spec);
  if (cfg.bias_init != "zero" && cfg.bias_init != "unigram" && cfg.bias_init != "uniform")
    throw InputError::described(
        "", "bias_init",
        "bias_init must be zero, unigram or uniform, got \"" + cfg.bias_init + "\"");
  if (cfg.bias_init == "unigram" && (mixture || is_adaptive(spec) || may_output_neg_inf(spec.kind)))
    throw InputError::described("", "bias_init",
                                "bias_init = \"unigram\" needs a single head with finite "
                                "log-outputs, not head = \"" +
                                    cfg.head.text() + "\"");
  if (!mixture && cfg.nhidlast != 0 && cfg.nhidlast != cfg.emsize)
    throw InputError::described(
        "", "nhidlast",
        "nhidlast = " + std::to_string(cfg.nhidlast) +
            " needs a mixture head (mos/moss): a single head's decoder input is emsize = " +
            std::to_string(cfg.emsize) + " (head = \"" + cfg.head.text() +
            "\"; set nhidlast = 0 or " + std::to_string(cfg.emsize) + ")");
}

void add_config_options(CLI::App& app, ConfigArgs& args) { key_table().add_options(app, args); }

WordLmConfig resolve_config(const std::string& config_path,
                            const std::vector<std::pair<std::string, std::string>>& overrides) {
  WordLmConfig cfg = key_table().merge(config_path, overrides);
  validate(cfg);
  return cfg;
}

WordLmConfig resolve_config(const ConfigArgs& args) {
  return resolve_config(args.config_path, args.overrides);
}

const runkit::TrainerDescriptor<WordLmConfig>& descriptor() {
  static const runkit::TrainerDescriptor<WordLmConfig> d{facts(), &key_table, &validate};
  return d;
}

}  // namespace sb::lm
