#include "trainers/charlm/config.h"

#include <stdexcept>

#include "common/head_spec.h"

namespace sb::charlm {

const runkit::FlatConfig<CharConfig>& char_config() {
  using C = CharConfig;
  static const runkit::FlatConfig<C> table(
      "Character-level LM configuration (trainers/charlm/config.h)",
      {
          {"dataset", &C::dataset, "word corpus the characters are spelled from: ptb"},
          {"data", &C::data, "corpus directory; \"\" = search datasets/ and ../shared/datasets"},
          {"train_chars", &C::train_chars, "use only the first N training symbols (0 = all)", 0},
          {"valid_chars", &C::valid_chars, "use only the first N validation symbols (0 = all)", 0},
          {"test_chars", &C::test_chars, "use only the first N test symbols (0 = all)", 0},
          {"head", &C::head, "output head: softmax, sigsoftmax, ... (no mixtures, no sparse)"},
          {"emsize", &C::emsize, "character embedding size", 1},
          {"nhid", &C::nhid, "LSTM units = d, the decoder's input size (paper: 1024)", 1},
          {"nlayers", &C::nlayers, "LSTM layers (paper: 1)", 1},
          {"batch_size", &C::batch_size, "training batch size (paper: 100)", 1},
          {"eval_batch_size", &C::eval_batch_size, "validation batch size", 1},
          {"bptt", &C::bptt, "truncated BPTT length (paper: 200)", 2},
          {"lr", &C::lr, "Adam learning rate (paper: 0.001)", 0, true},
          {"clip", &C::clip, "gradient norm clipping (0 = none)", 0},
          {"epochs", &C::epochs, "training epochs", 1},
          {"max_batches", &C::max_batches, "stop each epoch after N batches (0 = whole epoch)", 0},
          {"seed", &C::seed, "random seed", 0},
          {"threads", &C::threads, "threads (0 = number of cores)", 0},
          {"log_interval", &C::log_interval, "progress line every N batches", 1},
          {"out", &C::out, "run directory; \"\" = results/char_<dataset>_<head>"},
      });
  return table;
}

void validate(const CharConfig& c) {
  char_config().check_ranges(c);
  const HeadSpec spec = parse_head_setting(c.head);
  if (is_mixture(spec) || may_output_neg_inf(spec.kind))
    throw std::invalid_argument("head = \"" + c.head +
                                "\": train_charlm takes a single head with finite log-outputs");
  if (c.dataset.empty()) throw std::invalid_argument("dataset must not be empty");
}

std::string trajectory_toml(CharConfig c) {
  c.epochs = 0;
  c.log_interval = 1;
  c.out.clear();
  c.data.clear();
  return char_config().to_toml(c);
}

std::string run_dir(const CharConfig& c) {
  if (!c.out.empty()) return c.out;
  return "results/char_" + c.dataset + "_" + head_file_name(c.head);
}

}  // namespace sb::charlm
