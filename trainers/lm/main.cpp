// train_wordlm: AWD-LSTM word-level language model with any output head (Kanai et al. 2018,
// Tables 1-3): train (SGD -> NT-ASGD) -> finetune -> dump the test set's log-probabilities.

#include <CLI/CLI.hpp>

#include <string>

#include "trainers/lm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  std::string until = "dump";
  return sb::runkit::trainer_main(
      argc, argv, sb::lm::descriptor(),
      [&](sb::lm::WordLmConfig config, const sb::runkit::TrainerRun& run) {
        return sb::lm::train(std::move(config), run, until);
      },
      [&](CLI::App& app) {
        app.add_option("--until", until,
                       "stop after this stage, checkpoint saved: train (the main SGD/NT-ASGD "
                       "phase), finetune, or dump (everything: the test-set dump and final.json); "
                       "a later --resume continues from there")
            ->check(CLI::IsMember({"train", "finetune", "dump"}))
            ->capture_default_str();
      });
}
