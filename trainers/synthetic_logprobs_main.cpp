// synthetic_logprobs: random H (T x d), decoder W and optional bias through any head, written as
// a log-output file (the HDF5 contract of contract/logprob_file.h) for rank_analysis: Theorem 2
// checked in seconds, without training.

// The program is trainers/synthetic_logprobs_cli.cpp, declared here rather than included:
// this file needs no LibTorch header.
namespace sb {
int synthetic_logprobs_main(int argc, char** argv);
}  // namespace sb

int main(int argc, char** argv) { return sb::synthetic_logprobs_main(argc, argv); }
