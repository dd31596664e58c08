// train_classifier: the image-classification experiments of the spherical-family paper
// (de Brebisson & Vincent 2016, sec. 4.1, Tables 1-2) with any output head of the registry, or
// the squared error (mse): the MNIST conv net on Fashion-MNIST (Debian package
// dataset-fashion-mnist) or a user's MNIST (--data DIR). Writes test error, NLL and loss to
// final.json and the test set's (T, 10) log-outputs to logprobs.h5 for rank_analysis.

// The program is cli_main (trainer.{h,cpp}), declared here rather than included: this file
// needs no LibTorch header.
namespace sb::classifier {
int cli_main(int argc, char** argv);
}  // namespace sb::classifier

int main(int argc, char** argv) { return sb::classifier::cli_main(argc, argv); }
