#pragma once
// The one way a program of this project reads its command line (CLI11): --help (and a version
// flag, where a program sets one) prints and exits 0; a malformed command line (an unknown
// option, a missing required one, a value of the wrong type) is one line on stderr,
// "error: <what> (see --help)", and exit status 2, as every other bad input (CLI11's own exit
// would add a second line, "Run with --help ...").

namespace CLI {
class App;
}

namespace sb {

/// Parses argv into `app`. Returns -1 when the program should go on, else the exit status to
/// return at once (0 after --help, kExitBadInput after the one-line error).
int parse_or_exit(CLI::App& app, int argc, char** argv);

}  // namespace sb
