// train_bigram: the toy fifth trainer (tests/trainers/bigram/config.h): a thin main over its
// descriptor, like every trainer's.

// The program is cli_main (trainer.{h,cpp}), declared here rather than included: this file
// needs no LibTorch header.
namespace sb::bigram {
int cli_main(int argc, char** argv);
}  // namespace sb::bigram

int main(int argc, char** argv) { return sb::bigram::cli_main(argc, argv); }
