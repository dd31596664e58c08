// train_charlm: the character-level LSTM LM of Kanai et al. 2018 (supplementary D) with any
// single output head, on PTB spelled as characters (trainers/charlm/char_corpus.h): train ->
// best model's valid / test bits per character -> the test set's log-output matrix in
// <out>/logprobs.h5. With M ~ 50 symbols < d + 2, softmax is not bottlenecked here.

#include "trainers/charlm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(
      argc, argv,
      "Train a character-level LSTM language model (Kanai et al. 2018, supplementary D) with any "
      "single output head on a word corpus spelled as characters (each word's characters, <sp> "
      "between words, <eos> at the end of a line), and write the test set's log-output matrix to "
      "<out>/logprobs.h5 (batch size 1, every test symbol).\nSettings: defaults, then --config "
      "FILE (TOML), then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, "
      "best.pt, logprobs.h5, final.json (bits per character).\nExit status: 0 done, 2 bad input, "
      "4 non-finite loss, 130 interrupted (checkpoint saved; continue with --resume).",
      sb::charlm::descriptor(), sb::charlm::train);
}
