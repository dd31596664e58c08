// train_nplm: Bengio et al.'s feed-forward neural LM with any single output head, as de Brebisson
// & Vincent (2016, sec. 4.4.1, Table 5) train it on PTB: train -> best model's valid/test ppl ->
// the test set's log-output matrix in <out>/logprobs.h5 (the contract rank_analysis reads).

#include "trainers/nplm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(argc, argv, sb::nplm::descriptor(), sb::nplm::train);
}
