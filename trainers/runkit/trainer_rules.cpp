#include "trainers/runkit/trainer_rules.h"

#include <utility>

#include "common/errors.h"

namespace sb::runkit {

HeadSpec single_finite_head(const HeadSetting& head, const std::string& trainer,
                            const std::string& note) {
  const HeadSpec spec = head.spec();
  if (is_mixture(spec) || is_adaptive(spec) || may_output_neg_inf(spec.kind))
    throw InputError::described("", "head",
                                "head = \"" + head.text() + "\": " + trainer +
                                    " takes a single head with finite log-outputs" +
                                    (note.empty() ? "" : " (" + note + ")"));
  return spec;
}

void require_dataset(const std::string& dataset) {
  if (dataset.empty()) throw InputError::described("", "dataset", "dataset must not be empty");
}

TrainerFacts one_command_facts(std::string kind, std::string run_prefix, std::string summary,
                               std::string help) {
  TrainerFacts f;
  f.kind = std::move(kind);
  f.run_prefix = std::move(run_prefix);
  f.summary = std::move(summary);
  f.help = std::move(help);
  f.stages = {"train"};  // trains, evaluates the best model and dumps the test set in one command
  f.outputs = {"config.toml", "metrics.jsonl", "checkpoint.pt",
               "best.pt",     "logprobs.h5",   "final.json"};
  return f;
}

}  // namespace sb::runkit
