// train_wordlm: AWD-LSTM word-level language model with any output head (Kanai et al. 2018,
// Tables 1-3): train (SGD -> NT-ASGD) -> finetune -> dump the test set's log-probabilities.

// The program is cli_main (trainer.{h,cpp}), declared here rather than included: this file
// needs no LibTorch header.
namespace sb::lm {
int cli_main(int argc, char** argv);
}  // namespace sb::lm

int main(int argc, char** argv) { return sb::lm::cli_main(argc, argv); }
