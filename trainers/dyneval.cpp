// dyneval: dynamic evaluation (Krause et al. 2017) of a model trained by train_wordlm, the last
// step of Kanai et al. 2018's language-model tables ("+dynamic eval."): gradient statistics on the
// training data, then static and dynamic valid/test perplexities, optionally after a grid search
// of lr x lambda on the validation set. The work is trainers/lm/dyneval_run.h; the settings are
// the key table of trainers/lm/dyneval_config.h.

// The program is trainers/lm/dyneval_cli.cpp, declared here rather than included:
// this file needs no LibTorch header.
namespace sb::lm {
int dyneval_main(int argc, char** argv);
}  // namespace sb::lm

int main(int argc, char** argv) { return sb::lm::dyneval_main(argc, argv); }
