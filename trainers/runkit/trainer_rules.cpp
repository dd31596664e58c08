#include "trainers/runkit/trainer_rules.h"

#include <utility>

#include "common/errors.h"

namespace sb::runkit {

HeadSpec single_finite_head(const std::string& head, const std::string& trainer,
                            const std::string& note) {
  const HeadSpec spec = parse_head_setting(head);
  if (is_mixture(spec) || is_adaptive(spec) || may_output_neg_inf(spec.kind))
    throw InputError::described("", "head",
                                "head = \"" + head + "\": " + trainer +
                                    " takes a single head with finite log-outputs" +
                                    (note.empty() ? "" : " (" + note + ")"));
  return spec;
}

void require_dataset(const std::string& dataset) {
  if (dataset.empty()) throw InputError::described("", "dataset", "dataset must not be empty");
}

std::string run_dir_or(const std::string& out, const std::string& stem, const std::string& head) {
  if (!out.empty()) return out;
  return "results/" + stem + "_" + head_file_name(head);
}

TrainerFacts one_command_facts(std::string kind, std::string summary, std::string help) {
  TrainerFacts f;
  f.kind = std::move(kind);
  f.summary = std::move(summary);
  f.help = std::move(help);
  f.stages = {"train"};  // trains, evaluates the best model and dumps the test set in one command
  f.outputs = {"config.toml", "metrics.jsonl", "checkpoint.pt",
               "best.pt",     "logprobs.h5",   "final.json"};
  return f;
}

}  // namespace sb::runkit
