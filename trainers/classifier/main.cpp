// train_classifier: the image-classification experiments of the spherical-family paper
// (de Brebisson & Vincent 2016, sec. 4.1, Tables 1-2) with any output head of the registry, or
// the squared error (mse): the MNIST conv net on Fashion-MNIST (Debian package
// dataset-fashion-mnist) or a user's MNIST (--data DIR). Writes test error, NLL and loss to
// final.json and the test set's (T, 10) log-outputs to logprobs.h5 for rank_analysis.

#include "trainers/classifier/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(argc, argv, sb::classifier::descriptor(), sb::classifier::train);
}
