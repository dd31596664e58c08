#pragma once
// The rules and facts that several trainers' descriptors share (their config.cpp): written once
// here so that a trainer states only what is its own. LibTorch-free (runkit_config).
//
//   void validate(const NplmConfig& c) {
//     key_table().check_ranges(c);
//     const HeadSpec spec = runkit::single_finite_head(c.head, "train_nplm");
//     runkit::require_dataset(c.dataset);
//   }

#include <string>

#include "common/head_setting.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::runkit {

/// The head of a trainer that takes one registry head with finite log-outputs (nplm, charlm):
/// takes `head`'s spec (its parse error, if any) and refuses a mixture, an adaptive head and a head
/// that may output -inf (sparse) with sb::InputError on the key "head": `head = "H": TRAINER takes
/// a single head with finite log-outputs (NOTE)`, the parenthesis only with a note.
HeadSpec single_finite_head(const HeadSetting& head, const std::string& trainer,
                            const std::string& note = "");

/// A corpus or image set must be named: sb::InputError on the key "dataset" when it is empty.
void require_dataset(const std::string& dataset);

/// The facts of a trainer whose one command trains, evaluates the best model and dumps the test
/// set (stage "train"; outputs config.toml, metrics.jsonl, checkpoint.pt, best.pt, logprobs.h5,
/// final.json); run_prefix as TrainerFacts::run_prefix.
TrainerFacts one_command_facts(std::string kind, std::string run_prefix, std::string summary,
                               std::string help);

}  // namespace sb::runkit
