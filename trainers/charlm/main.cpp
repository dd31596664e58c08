// train_charlm: the character-level LSTM LM of Kanai et al. 2018 (supplementary D) with any
// single output head, on PTB spelled as characters (trainers/charlm/char_corpus.h): train ->
// best model's valid / test bits per character -> the test set's log-output matrix in
// <out>/logprobs.h5. With M ~ 50 symbols < d + 2, softmax is not bottlenecked here.

// The program is cli_main (trainer.{h,cpp}), declared here rather than included: this file
// needs no LibTorch header.
namespace sb::charlm {
int cli_main(int argc, char** argv);
}  // namespace sb::charlm

int main(int argc, char** argv) { return sb::charlm::cli_main(argc, argv); }
