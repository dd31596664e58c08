// libFuzzer harness: a TOML configuration file read through the word LM's key table
// (trainers/lm/config.h over trainers/runkit/config_table.h, toml++ compiled in). The input is
// the file's text: it is loaded (key_table().load_text), validated (ranges and cross-key rules),
// and a config that loads is written back with to_toml, which must read back to the same text (the
// engine's round-trip promise). A std::exception is the expected answer to a bad file; anything
// else (a crash, a sanitizer report, a leak, a timeout, a failed round trip) is a finding.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "trainers/lm/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sb::lm::WordLmConfig cfg;
  try {
    cfg = sb::lm::key_table().load_text(text, "fuzz.toml");
  } catch (const std::exception&) {
    return 0;
  }
  try {
    sb::lm::validate(cfg);
    sb::lm::run_dir(cfg);
  } catch (const std::exception&) {
  }
  const std::string saved = sb::lm::key_table().to_toml(cfg);
  // Written by us, so it must load; and load to the same text (nan and -0.0 included).
  if (sb::lm::key_table().to_toml(sb::lm::key_table().load_text(saved, "round-trip.toml")) != saved)
    __builtin_trap();
  sb::lm::key_table().trajectory_toml(cfg);
  return 0;
}
