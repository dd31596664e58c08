#pragma once
// The word LM's phases (Merity et al. 2018; Yang et al. 2018's finetune.py): main SGD, switched to
// averaged SGD by the NT-ASGD trigger; finetuning (ASGD restarted from the best model until the
// trigger fires again); done (the test-set dump follows). The phase and the trigger's state are
// the word LM's own fields in the one checkpoint (trainers/lm/trainer.h).

#include <string>

namespace sb::lm {

enum class Phase { main, finetune, done };
std::string phase_name(Phase phase);
/// Throws sb::InputError (file "", field "phase") for a name other than main, finetune, done.
Phase phase_from_name(const std::string& name);

}  // namespace sb::lm
