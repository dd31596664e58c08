// train_nplm: Bengio et al.'s feed-forward neural LM with any single output head, as de Brebisson
// & Vincent (2016, sec. 4.4.1, Table 5) train it on PTB: train -> best model's valid/test ppl ->
// the test set's log-output matrix in <out>/logprobs.h5 (the contract rank_analysis reads).

// The program is cli_main (trainer.{h,cpp}), declared here rather than included: this file
// needs no LibTorch header.
namespace sb::nplm {
int cli_main(int argc, char** argv);
}  // namespace sb::nplm

int main(int argc, char** argv) { return sb::nplm::cli_main(argc, argv); }
