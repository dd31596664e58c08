// train_classifier: the image-classification experiments of the spherical-family paper
// (de Brebisson & Vincent 2016, sec. 4.1, Tables 1-2) with any output head of the registry, or
// the squared error (mse): the MNIST conv net on Fashion-MNIST (Debian package
// dataset-fashion-mnist) or a user's MNIST (--data DIR). Writes test error, NLL and loss to
// final.json and the test set's (T, 10) log-outputs to logprobs.h5 for rank_analysis.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/blas_core.h"
#include "datasets/image_dataset.h"
#include "trainers/classifier/config.h"
#include "trainers/classifier/splits.h"
#include "trainers/classifier/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Train the MNIST conv net of de Brebisson & Vincent (2016, sec. 4.1) with any output head "
      "(or mse) on Fashion-MNIST (Debian package dataset-fashion-mnist) or MNIST (--data DIR): "
      "Nesterov momentum, lr halved after `patience` epochs without validation improvement, "
      "early stopping; then the best model on the test split.\n"
      "Settings: the defaults (the paper's), then --config FILE (TOML, the keys below), then "
      "--<key> VALUE. Outputs in --out: config.toml, metrics.jsonl, checkpoint.pt, best.pt, "
      "final.json (test error %, test NLL, test loss), logprobs.h5 (the test set's log-outputs, "
      "T x 10, for rank_analysis; not for mse).\n"
      "Exit status: 0 done, 2 bad input or config, 4 non-finite loss, 130 interrupted "
      "(checkpoint saved; --resume continues)."};
  return sb::runkit::trainer_main(
      app, argc, argv, sb::classifier::descriptor(),
      [](const sb::classifier::ClassifierConfig& config, const sb::runkit::TrainerRun& run) {
        const auto dir = sb::data::find_image_dataset_dir(config.dataset, config.data);
        const auto data = sb::data::load_image_dataset(config.dataset, dir);
        auto splits = sb::classifier::make_splits(data, config);
        std::printf(
            "%s: %s, %s split: %lld train / %lld valid / %lld test images; head %s; %d threads; "
            "run "
            "directory %s\n",
            config.dataset.c_str(), dir.c_str(), config.split.c_str(),
            static_cast<long long>(splits.train.size()),
            static_cast<long long>(splits.valid.size()), static_cast<long long>(splits.test.size()),
            config.head.c_str(), run.threads, run.run_dir.c_str());
        std::fflush(stdout);
        sb::classifier::ClassifierTrainer trainer(config, std::move(splits), data.classes,
                                                  data.name, run.run_dir);
        return sb::runkit::run_trainer(trainer, run.flags);
      });
}
