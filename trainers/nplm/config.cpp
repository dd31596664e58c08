#include "trainers/nplm/config.h"

#include <utility>

#include "common/errors.h"
#include "common/head_spec.h"
#include "trainers/runkit/epoch_keys.h"
#include "trainers/runkit/trainer_rules.h"

namespace sb::nplm {

using runkit::at_least;  // the key table's rows (trainers/runkit/config_table.h)
using runkit::key;

const runkit::ConfigTable<NplmConfig>& key_table() {
  using C = NplmConfig;
  static const runkit::ConfigTable<C> table(
      "Feed-forward neural LM configuration (trainers/nplm/config.h)",
      {
          {"data", runkit::corpus_keys<C>("corpus name: ptb | wikitext-2")},
          {"model",
           {
               runkit::head_key<C>(),
               key("classes", &C::classes,
                   "0 = the LM over every word; C > 0 = a C-class task: the rows whose next "
                   "word is among the C most frequent training words, that word the label "
                   "(the sparse-softmax control; test error reported)",
                   at_least(0)),
               key("context", &C::context, "words of context (paper: 6)", at_least(1)),
               key("emsize", &C::emsize, "word embedding size (paper: 250)", at_least(1)),
               key("layers", &C::layers, "ReLU hidden layers", at_least(1)),
               key("hidden", &C::hidden, "units per hidden layer = d, the decoder's input size",
                   at_least(1)),
           }},
          {"training",
           runkit::join<C>(
               {
                   key("batch_size", &C::batch_size, "SGD batch size (paper: 250)", at_least(1)),
                   key("lr", &C::lr, "plain SGD learning rate", runkit::above(0)),
                   key("lr_decay", &C::lr_decay,
                       "lr factor after an epoch whose validation loss is not the best (1 = "
                       "constant)",
                       runkit::above(0)),
               },
               runkit::epoch_loop_keys<C>())},
          {"outputs",
           {
               runkit::out_key<C>("results/nplm_<dataset>_<head>"),
               key("dump_rows", &C::dump_rows,
                   "test rows written to <out>/logprobs.h5 (0 = every test token)", at_least(0))
                   .not_trajectory(),
           }},
      },
      runkit::TableOptions{"trainers/configs/nplm_ptb_cpu.toml"});
  return table;
}

void validate(const NplmConfig& c) {
  key_table().check_ranges(c);
  // Sparse top-k gives log 0 to the words outside its top k: no perplexity, so only as a
  // classifier (classes > 0), judged by its error as Sun et al. 2021 judge it.
  const HeadSpec& parsed = c.head.spec();
  if (parsed.kind == HeadKind::sparse && c.classes == 0)
    throw InputError::described("", "head",
                                "head = \"" + c.head.text() +
                                    "\": sparse needs classes > 0 (a classifier: its log 0 "
                                    "outside the top k has no perplexity)");
  const HeadSpec spec = parsed.kind == HeadKind::sparse
                            ? parsed
                            : runkit::single_finite_head(c.head, "train_nplm",
                                                         "train_nplm --describe lists them; the "
                                                         "adaptive heads train in train_wordlm");
  if (spec.kind == HeadKind::sigsoftmax && spec.learnable_bias)
    throw InputError::described(
        "", "head", "head = \"" + c.head.text() + "\": sigsoftmax:b=1 is not supported here");
  runkit::require_dataset(c.dataset);
}

const runkit::TrainerDescriptor<NplmConfig>& descriptor() {
  static const runkit::TrainerDescriptor<NplmConfig> d{
      runkit::one_command_facts(
          "nplm", "nplm_",
          "feed-forward neural LM (Bengio et al. 2003) with any single head, as de Brebisson & "
          "Vincent 2016 (sec. 4.4.1) train it on PTB",
          "Train a feed-forward neural language model (Bengio et al. 2003; de Brebisson & Vincent "
          "2016, sec. 4.4.1) with any single output head, and write the test set's log-output "
          "matrix to <out>/logprobs.h5.\nContexts span sentence boundaries (<eos> is a token; the "
          "first context of a split is padded with <eos>). Settings: defaults, then --config FILE "
          "(TOML), then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, "
          "best.pt, logprobs.h5, final.json."),
      &key_table, &validate};
  return d;
}

}  // namespace sb::nplm
