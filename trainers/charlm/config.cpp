#include "trainers/charlm/config.h"

#include <utility>

#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"
#include "trainers/runkit/trainer_rules.h"

namespace sb::charlm {

using runkit::at_least;  // the key table's rows (trainers/runkit/config_table.h)
using runkit::key;

const runkit::ConfigTable<CharConfig>& key_table() {
  using C = CharConfig;
  static const runkit::ConfigTable<C> table(
      "Character-level LM configuration (trainers/charlm/config.h)",
      {
          {"data",
           {
               key("dataset", &C::dataset, "word corpus the characters are spelled from: ptb"),
               key("data", &C::data,
                   "corpus directory; \"\" = search datasets/ and ../shared/datasets")
                   .not_trajectory(),
               key("train_chars", &C::train_chars,
                   "use only the first N training symbols (0 = all)", at_least(0)),
               key("valid_chars", &C::valid_chars,
                   "use only the first N validation symbols (0 = all)", at_least(0)),
               key("test_chars", &C::test_chars, "use only the first N test symbols (0 = all)",
                   at_least(0)),
           }},
          {"model",
           {
               runkit::head_key<C>(),
               key("emsize", &C::emsize, "character embedding size", at_least(1)),
               key("nhid", &C::nhid, "LSTM units = d, the decoder's input size (paper: 1024)",
                   at_least(1)),
               key("nlayers", &C::nlayers, "LSTM layers (paper: 1)", at_least(1)),
               key("latent", &C::latent,
                   "d: a linear map nhid -> latent before the decoder, so d < M can bind the "
                   "bottleneck at the same LSTM (0 = none, d = nhid; the mechanism profile)",
                   at_least(0)),
           }},
          {"training",
           runkit::join<C>(
               {
                   key("batch_size", &C::batch_size, "training batch size (paper: 100)",
                       at_least(1)),
                   key("eval_batch_size", &C::eval_batch_size, "validation batch size",
                       at_least(1)),
                   key("bptt", &C::bptt, "truncated BPTT length (paper: 200)", at_least(2)),
                   key("lr", &C::lr, "Adam learning rate (paper: 0.001)", runkit::above(0)),
               },
               runkit::epoch_loop_keys<C>())},
          {"outputs",
           {
               runkit::out_key<C>("results/char_<dataset>_<head>"),
           }},
      },
      runkit::TableOptions{"trainers/configs/char_ptb_cpu.toml"});
  return table;
}

void validate(const CharConfig& c) {
  key_table().check_ranges(c);
  runkit::single_finite_head(c.head, "train_charlm", "the adaptive heads train in train_wordlm");
  runkit::require_dataset(c.dataset);
}

const runkit::TrainerDescriptor<CharConfig>& descriptor() {
  static const runkit::TrainerDescriptor<CharConfig> d{
      runkit::one_command_facts(
          "charlm", "char_",
          "character-level LSTM LM with any single head (Kanai et al. 2018, supplementary D: the "
          "M < d control)",
          "Train a character-level LSTM language model (Kanai et al. 2018, supplementary D) with "
          "any single output head on a word corpus spelled as characters (each word's characters, "
          "<sp> between words, <eos> at the end of a line), and write the test set's log-output "
          "matrix to <out>/logprobs.h5 (batch size 1, every test symbol).\nSettings: defaults, "
          "then --config FILE (TOML), then --<key> VALUE. Outputs: <out>/config.toml, "
          "metrics.jsonl, checkpoint.pt, best.pt, logprobs.h5, final.json (bits per "
          "character)."),
      &key_table, &validate};
  return d;
}

}  // namespace sb::charlm
