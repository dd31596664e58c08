// train_bigram: the toy fifth trainer (tests/trainers/bigram/config.h): a thin main over its
// descriptor, like every trainer's.

#include "tests/trainers/bigram/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  return sb::runkit::trainer_main(argc, argv, sb::bigram::descriptor(), sb::bigram::train);
}
