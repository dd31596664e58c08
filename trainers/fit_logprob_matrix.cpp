// fit_logprob_matrix: the softmax bottleneck measured without training noise. A real conditional
// distribution (the smoothed PTB bigram matrix P*(w | previous word) over the most frequent
// contexts) is fitted to convergence by each head with free d-dimensional context vectors, for
// every d asked; the report gives the converged KL(P* || P_theta), a second fit from another seed
// beside it, and the rank of each fitted log-matrix (trainers/fit/fit_logprob.h).

// The program is trainers/fit/fit_cli.cpp, declared here rather than included:
// this file needs no LibTorch header.
namespace sb::fit {
int fit_logprob_matrix_main(int argc, char** argv);
}  // namespace sb::fit

int main(int argc, char** argv) { return sb::fit::fit_logprob_matrix_main(argc, argv); }
