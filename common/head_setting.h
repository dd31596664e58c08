#pragma once
// A configuration's `head` key, parsed once. A trainer's config holds a HeadSetting, not a string:
// the config engine (trainers/runkit/config_table.h) sets it from the file or the command line,
// which parses the spelling there and then, and every later user (the trainer's validate, its
// model, its corpus, its dump's header, final.json) takes spec() or text(). A second parse of
// the same spelling has nowhere to happen.
//
//   HeadSetting head;             // softmax (HeadSpec{}), no parse
//   head = "mos:K=15";            // parsed here; head.spec().experts == 15
//   head = "softmaxx";            // kept: text() is what was written, and spec() throws the
//                                 // parse error: head = "softmaxx": unknown head ...
//
// An invalid spelling is held rather than thrown at assignment so that a config can be loaded,
// printed and judged (--describe's verdicts) before validate() reports its first fault.

#include <cstddef>
#include <string>
#include <vector>

#include "common/head_spec.h"

namespace sb {

class HeadSetting {
 public:
  /// softmax, the default of every trainer (HeadSpec{}; nothing to parse).
  HeadSetting() = default;
  /// softmax, and a trainer's own head names beside the registry (the classifier's "mse"): such a
  /// name is held as is, with no HeadSpec (is_own()).
  explicit HeadSetting(std::vector<std::string> own_names);

  /// Parses `text` (HeadSpec::parse) once; keeps the own names.
  HeadSetting& operator=(const std::string& text);
  HeadSetting& operator=(const char* text) { return *this = std::string(text); }

  /// The spelling as written: what config.toml, a checkpoint's trajectory keys, --help and
  /// final.json's "head" hold.
  const std::string& text() const noexcept { return text_; }
  /// Whether the spelling is one of the trainer's own names (then spec() is a defect to ask).
  bool is_own() const;
  /// The parsed head. Throws the parse error as sb::OptionError on the key "head"
  /// (`head = "<text>": <why>`, with " (or <own names>)" where the trainer has its own), or
  /// std::logic_error for an own name.
  const HeadSpec& spec() const;

  friend bool operator==(const HeadSetting& a, const std::string& b) { return a.text_ == b; }
  friend bool operator!=(const HeadSetting& a, const std::string& b) { return a.text_ != b; }

 private:
  std::string text_ = "softmax";
  HeadSpec spec_{};
  std::string error_;  ///< the parse error's line; empty when text_ parsed (or is an own name)
  std::vector<std::string> own_;
};

}  // namespace sb
