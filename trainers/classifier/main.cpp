// train_classifier: the image-classification experiments of the spherical-family paper
// (de Brebisson & Vincent 2016, sec. 4.1, Tables 1-2) with any output head of the registry, or
// the squared error (mse): the MNIST conv net on Fashion-MNIST (Debian package
// dataset-fashion-mnist) or a user's MNIST (--data DIR). Writes test error, NLL and loss to
// final.json and the test set's (T, 10) log-outputs to logprobs.h5 for rank_analysis.

#include "trainers/classifier/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(
      argc, argv,
      "Train the MNIST conv net of de Brebisson & Vincent (2016, sec. 4.1) with any output head "
      "(or mse) on Fashion-MNIST (Debian package dataset-fashion-mnist) or MNIST (--data DIR): "
      "Nesterov momentum, lr halved after `patience` epochs without validation improvement, "
      "early stopping; then the best model on the test split.\n"
      "Settings: the defaults (the paper's), then --config FILE (TOML, the keys below), then "
      "--<key> VALUE. Outputs in --out: config.toml, metrics.jsonl, checkpoint.pt, best.pt, "
      "final.json (test error %, test NLL, test loss), logprobs.h5 (the test set's log-outputs, "
      "T x 10, for rank_analysis; not for mse).\n"
      "Exit status: 0 done, 2 bad input or config, 4 non-finite loss, 130 interrupted "
      "(checkpoint saved; --resume continues).",
      sb::classifier::descriptor(), sb::classifier::train);
}
