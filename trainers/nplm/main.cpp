// train_nplm: Bengio et al.'s feed-forward neural LM with any single output head, as de Brebisson
// & Vincent (2016, sec. 4.4.1, Table 5) train it on PTB: train -> best model's valid/test ppl ->
// the test set's log-output matrix in <out>/logprobs.h5 (the contract rank_analysis reads).

#include "trainers/nplm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(
      argc, argv,
      "Train a feed-forward neural language model (Bengio et al. 2003; de Brebisson & Vincent "
      "2016, sec. 4.4.1) with any single output head, and write the test set's log-output matrix "
      "to <out>/logprobs.h5.\nContexts span sentence boundaries (<eos> is a token; the first "
      "context of a split is padded with <eos>). Settings: defaults, then --config FILE (TOML), "
      "then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, best.pt, "
      "logprobs.h5, final.json.\nExit status: 0 done, 2 bad input, 4 non-finite loss, 130 "
      "interrupted (checkpoint saved; continue with --resume).",
      sb::nplm::descriptor(), sb::nplm::train);
}
