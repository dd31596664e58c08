// train_transformer: a decoder-only Transformer LM (GPT-2's shape) with any output head: train ->
// best model's valid/test ppl -> the test set's log-output matrix in <out>/logprobs.h5 (the
// contract rank_analysis reads), with the model's final normalisation in its final_norm attribute.

// The program is cli_main (trainer.{h,cpp}), declared here rather than included: this file
// needs no LibTorch header.
namespace sb::transformer {
int cli_main(int argc, char** argv);
}  // namespace sb::transformer

int main(int argc, char** argv) { return sb::transformer::cli_main(argc, argv); }
