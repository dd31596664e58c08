#include "trainers/charlm/config.h"

#include <stdexcept>

#include "common/head_spec.h"

namespace sb::charlm {

const runkit::FlatConfig<CharConfig>& char_config() {
  using C = CharConfig;
  static const runkit::FlatConfig<C> table(
      "Character-level LM configuration (trainers/charlm/config.h)",
      std::vector<runkit::FlatGroup<C>>{
          {"data",
           {
               {"dataset", &C::dataset, "word corpus the characters are spelled from: ptb"},
               {"data", &C::data,
                "corpus directory; \"\" = search datasets/ and ../shared/datasets"},
               {"train_chars", &C::train_chars, "use only the first N training symbols (0 = all)",
                0},
               {"valid_chars", &C::valid_chars, "use only the first N validation symbols (0 = all)",
                0},
               {"test_chars", &C::test_chars, "use only the first N test symbols (0 = all)", 0},
           }},
          {"model",
           {
               {"head", &C::head, "output head: softmax, sigsoftmax, ... (no mixtures, no sparse)"},
               {"emsize", &C::emsize, "character embedding size", 1},
               {"nhid", &C::nhid, "LSTM units = d, the decoder's input size (paper: 1024)", 1},
               {"nlayers", &C::nlayers, "LSTM layers (paper: 1)", 1},
           }},
          {"training",
           runkit::join<C>(
               {
                   {"batch_size", &C::batch_size, "training batch size (paper: 100)", 1},
                   {"eval_batch_size", &C::eval_batch_size, "validation batch size", 1},
                   {"bptt", &C::bptt, "truncated BPTT length (paper: 200)", 2},
                   {"lr", &C::lr, "Adam learning rate (paper: 0.001)", 0,
                    /*min_open=*/true},
               },
               runkit::epoch_loop_keys<C>())},
          {"outputs",
           {
               {"out", &C::out, "run directory; \"\" = results/char_<dataset>_<head>"},
           }},
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

std::string trajectory_toml(const CharConfig& c) {
  return char_config().to_toml(runkit::trajectory_keys(c));
}

std::string run_dir(const CharConfig& c) {
  if (!c.out.empty()) return c.out;
  return "results/char_" + c.dataset + "_" + head_file_name(c.head);
}

}  // namespace sb::charlm
