#include "tests/trainers/bigram/config.h"

#include <stdexcept>

#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"

namespace sb::bigram {

using runkit::at_least;
using runkit::key;

const runkit::ConfigTable<BigramConfig>& key_table() {
  using C = BigramConfig;
  static const runkit::ConfigTable<C> table(
      "Bigram LM configuration (tests/trainers/bigram/config.h)",
      {
          {"data", runkit::corpus_keys<C>("corpus name: ptb")},
          {"model",
           {
               key("head", &C::head, "output head: a single head with finite log-outputs"),
               key("d", &C::d, "embedding size = d, the decoder's input size", at_least(1)),
           }},
          {"training",
           runkit::join<C>({key("batch_size", &C::batch_size, "SGD batch size", at_least(1)),
                            key("lr", &C::lr, "plain SGD learning rate", runkit::above(0))},
                           runkit::epoch_loop_keys<C>())},
          {"outputs", {runkit::out_key<C>("results/bigram_<dataset>_<head>")}},
      });
  return table;
}

void validate(const BigramConfig& c) {
  key_table().check_ranges(c);
  const HeadSpec spec = parse_head_setting(c.head);
  if (is_mixture(spec) || is_adaptive(spec) || may_output_neg_inf(spec.kind))
    throw std::invalid_argument("head = \"" + c.head +
                                "\": train_bigram takes a single head with finite log-outputs");
  if (c.dataset.empty()) throw std::invalid_argument("dataset must not be empty");
}

std::string run_dir(const BigramConfig& c) {
  if (!c.out.empty()) return c.out;
  return "results/bigram_" + c.dataset + "_" + head_file_name(c.head);
}

namespace {

runkit::TrainerFacts facts() {
  runkit::TrainerFacts f;
  f.kind = "bigram";
  f.summary = "a toy bigram LM over the first PTB tokens (the fifth trainer of the tests)";
  f.stages = {"train"};
  f.outputs = {"config.toml", "metrics.jsonl", "checkpoint.pt",
               "best.pt",     "logprobs.h5",   "final.json"};
  return f;
}

}  // namespace

const runkit::TrainerDescriptor<BigramConfig>& descriptor() {
  static const runkit::TrainerDescriptor<BigramConfig> d{facts(), &key_table, &validate, &run_dir};
  return d;
}

}  // namespace sb::bigram
