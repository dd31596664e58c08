#include "trainers/nplm/config.h"

#include <stdexcept>

#include "common/head_spec.h"

namespace sb::nplm {

const runkit::FlatConfig<NplmConfig>& nplm_config() {
  using C = NplmConfig;
  static const runkit::FlatConfig<C> table(
      "Feed-forward neural LM configuration (trainers/nplm/config.h)",
      std::vector<runkit::FlatGroup<C>>{
          {"data",
           {
               {"dataset", &C::dataset, "corpus name: ptb | wikitext-2"},
               {"data", &C::data,
                "corpus directory; \"\" = search datasets/ and ../shared/datasets"},
               {"train_tokens", &C::train_tokens, "use only the first N training tokens (0 = all)",
                0},
               {"valid_tokens", &C::valid_tokens,
                "use only the first N validation tokens (0 = all)", 0},
               {"test_tokens", &C::test_tokens, "use only the first N test tokens (0 = all)", 0},
           }},
          {"model",
           {
               {"head", &C::head,
                "output head: softmax, softmax_abs, spherical[:eps=..], taylor, sigsoftmax, "
                "sigmoid, relu"},
               {"context", &C::context, "words of context (paper: 6)", 1},
               {"emsize", &C::emsize, "word embedding size (paper: 250)", 1},
               {"layers", &C::layers, "ReLU hidden layers", 1},
               {"hidden", &C::hidden, "units per hidden layer = d, the decoder's input size", 1},
           }},
          {"training",
           runkit::join<C>(
               {
                   {"batch_size", &C::batch_size, "SGD batch size (paper: 250)", 1},
                   {"lr", &C::lr, "plain SGD learning rate", 0, /*min_open=*/true},
                   {"lr_decay", &C::lr_decay,
                    "lr factor after an epoch whose validation loss is not the best (1 = "
                    "constant)",
                    0, /*min_open=*/true},
               },
               runkit::epoch_loop_keys<C>())},
          {"outputs",
           {
               {"out", &C::out, "run directory; \"\" = results/nplm_<dataset>_<head>"},
               {"dump_rows", &C::dump_rows,
                "test rows written to <out>/logprobs.h5 (0 = every test token)", 0},
           }},
      });
  return table;
}

void validate(const NplmConfig& c) {
  nplm_config().check_ranges(c);
  const HeadSpec spec = parse_head_setting(c.head);
  if (is_mixture(spec) || may_output_neg_inf(spec.kind))
    throw std::invalid_argument("head = \"" + c.head +
                                "\": train_nplm takes a single head with finite log-outputs "
                                "(softmax, softmax_abs, spherical, taylor, sigsoftmax, sigmoid, "
                                "relu)");
  if (spec.kind == HeadKind::sigsoftmax && spec.learnable_bias)
    throw std::invalid_argument("head = \"" + c.head + "\": sigsoftmax:b=1 is not supported here");
  if (c.dataset.empty()) throw std::invalid_argument("dataset must not be empty");
}

std::string trajectory_toml(const NplmConfig& c) {
  auto t = runkit::trajectory_keys(c);
  t.dump_rows = 0;  // written after training
  return nplm_config().to_toml(t);
}

std::string run_dir(const NplmConfig& c) {
  if (!c.out.empty()) return c.out;
  return "results/nplm_" + c.dataset + "_" + head_file_name(c.head);
}

}  // namespace sb::nplm
