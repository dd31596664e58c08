#include "tests/trainers/bigram/config.h"

#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"
#include "trainers/runkit/trainer_rules.h"

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
               runkit::head_key<C>(),
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
  runkit::single_finite_head(c.head, "train_bigram");
  runkit::require_dataset(c.dataset);
}

const runkit::TrainerDescriptor<BigramConfig>& descriptor() {
  static const runkit::TrainerDescriptor<BigramConfig> d{
      runkit::one_command_facts(
          "bigram", "bigram_",
          "a toy bigram LM over the first PTB tokens (the fifth trainer of the tests)",
          "Train a toy bigram language model with any single output head and write the test "
          "set's log-output matrix to <out>/logprobs.h5 (the tests' fifth trainer)."),
      &key_table, &validate};
  return d;
}

}  // namespace sb::bigram
