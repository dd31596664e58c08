// train_charlm: the character-level LSTM LM of Kanai et al. 2018 (supplementary D) with any
// single output head, on PTB spelled as characters (trainers/charlm/char_corpus.h): train ->
// best model's valid / test bits per character -> the test set's log-output matrix in
// <out>/logprobs.h5. With M ~ 50 symbols < d + 2, softmax is not bottlenecked here.

#include "trainers/charlm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(argc, argv, sb::charlm::descriptor(), sb::charlm::train);
}
