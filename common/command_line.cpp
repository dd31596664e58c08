#include "common/command_line.h"

#include <cstdio>

#include <CLI/CLI.hpp>

#include "common/errors.h"

namespace sb {

int parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return kExitBadInput;
  }
  return -1;
}

}  // namespace sb
