#pragma once
// The rows every epoch trainer's config shares (train_nplm, train_charlm), with the same meaning
// and the same trajectory flags: clip, epochs, max_batches, seed, threads, log_interval; and the
// rows of every trainer: head, the corpus's, out. A policy of the trainers, not of the engine
// (trainers/runkit/config_table.h).

#include <string>
#include <vector>

#include "trainers/runkit/config_table.h"

namespace sb::runkit {

/// The shared rows over the config struct C, which has the members of the same names. epochs and
/// log_interval do not shape the trajectory (a resumed run may change them).
template <class C>
std::vector<ConfigKey<C>> epoch_loop_keys() {
  return {
      key("clip", &C::clip, "gradient norm clipping (0 = none)", at_least(0)),
      key("epochs", &C::epochs, "training epochs", at_least(1)).not_trajectory(),
      key("max_batches", &C::max_batches, "stop each epoch after N batches (0 = whole epoch)",
          at_least(0)),
      key("seed", &C::seed, "random seed", at_least(0)),
      key("threads", &C::threads, "threads (0 = number of cores)", at_least(0)),
      key("log_interval", &C::log_interval, "progress line every N batches", at_least(1))
          .not_trajectory(),
  };
}

/// The rows of a corpus-reading trainer (train_wordlm, train_nplm): the corpus name, its
/// directory and the first tokens of each split. `dataset` describes the corpus names the trainer
/// knows. data does not shape the trajectory (the same corpus may move).
template <class C>
std::vector<ConfigKey<C>> corpus_keys(const std::string& dataset) {
  return {
      key("dataset", &C::dataset, dataset),
      key("data", &C::data, "corpus directory; \"\" = search datasets/ and ../shared/datasets")
          .not_trajectory(),
      key("train_tokens", &C::train_tokens, "use only the first N training tokens (0 = all)",
          at_least(0)),
      key("valid_tokens", &C::valid_tokens, "use only the first N validation tokens (0 = all)",
          at_least(0)),
      key("test_tokens", &C::test_tokens, "use only the first N test tokens (0 = all)",
          at_least(0)),
  };
}

/// The output-head row of every trainer. How a head is written is said here once; which heads
/// the trainer takes is typed nowhere: --help lists them below the options from the trainer's own
/// validate (heads_text, trainers/runkit/trainer_descriptor.h), --describe gives each
/// refusal's reason. `own`: the trainer's own outputs besides the registry's heads, described
/// ("mse (squared error on the one-hot target)"), "" for none.
template <class C>
ConfigKey<C> head_key(const std::string& own = "") {
  return key("head", &C::head,
             "output head: a registry name with its settings, name[:key=value,...] (sigsoftmax, "
             "mos:K=15, sparse:k=20)" +
                 (own.empty() ? std::string() : ", or " + own) +
                 "; --help and --describe list the heads this trainer takes");
}

/// The run-directory row of every trainer; `fallback` is the directory "" stands for. Where a run
/// is written does not shape its trajectory.
template <class C>
ConfigKey<C> out_key(const std::string& fallback) {
  return key("out", &C::out, "run directory; \"\" = " + fallback).not_trajectory();
}

}  // namespace sb::runkit
