#include "trainers/lm/phase.h"

#include "common/errors.h"

namespace sb::lm {

std::string phase_name(Phase phase) {
  switch (phase) {
    case Phase::main:
      return "main";
    case Phase::finetune:
      return "finetune";
    case Phase::done:
      return "done";
  }
  return "?";
}

Phase phase_from_name(const std::string& name) {
  if (name == "main") return Phase::main;
  if (name == "finetune") return Phase::finetune;
  if (name == "done") return Phase::done;
  throw InputError("", "phase", "main, finetune or done", "'" + name + "'");
}

}  // namespace sb::lm
