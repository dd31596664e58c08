#pragma once
// The errors the suite reports to a user, typed in HighFive's manner: one class per kind of fault,
// each carrying what a caller needs to act on it (the file, the field, the expected value, the
// option), with what() the one line a user reads. And the one place that turns any exception into
// that line and an exit status: every binary (runkit::guarded, rank_analysis, synthetic_logprobs,
// fit_logprob_matrix) and sbrank's Python exceptions go through error_report().
//
//   throw sb::InputError(path, "attribute 'd'", "an integer >= 1", "0");
//       // what(): "lp.h5: attribute 'd': expected an integer >= 1, got 0"
//   throw sb::FormatError::described(path, "header", path + ": not an HDF5 file");
//   throw sb::OptionError("--budget-gb", "a number > 0", "-1");
//   throw sb::WriteError(tmp, "the write failed at row 104; is the disk full?");
//
// The hierarchy:
//   std::runtime_error
//   └── sb::Error                 anything a user can act on; exit status 2 (kExitBadInput)
//       ├── sb::InputError        a file's (or array's, or stream's) content: file, field, expected
//       │   └── sb::FormatError   not of the format at all: missing, unreadable, wrong magic,
//       truncated ├── sb::OptionError       a command-line option, config key or API argument:
//       option, expected └── sb::WriteError        a create, write, flush, close or rename that
//       failed: file
//
// A full disk or a failed close is bad input too (the standards' rule): WriteError exits 2, and
// the writers guarantee that nothing that did not close cleanly is under its final name.

#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

namespace sb {

/// Exit statuses shared by every binary of the suite, the only place they are numbers; every
/// binary's --help states its own from exit_statuses_text.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;       // bad input, an unwritable output, out of memory
inline constexpr int kExitBoundExceeded = 3;  // rank_analysis --check: a bounded head above it
inline constexpr int kExitNonFinite = 4;      // a trainer's loss became NaN or infinite
inline constexpr int kExitInternal = 70;      // a defect of the program (EX_SOFTWARE, sysexits.h)
inline constexpr int kExitInterrupted = 130;  // SIGINT/SIGTERM: a checkpoint was saved

/// "Exit status: 0 done, 2 bad input (...), ..., 70 internal error (...)": the paragraph of
/// --help for the statuses a binary can return, in the order given, each described once here.
std::string exit_statuses_text(std::initializer_list<int> statuses);

/// Base of every error a user can act on. what() is one line.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& line) : std::runtime_error(line) {}
};

/// A file's content is not what its reader expects (an HDF5 attribute, a dataset's shape, a
/// config key's value, an idx header, a checkpoint's tensor). Carries the file, the field and
/// the expected value; `got` is what was found, when that is short enough to print.
class InputError : public Error {
 public:
  /// The standard line: "FILE: FIELD: expected EXPECTED" and ", got GOT" when got is not empty
  /// ("FIELD: ..." when file is empty: a config key, whose file the caller names).
  InputError(std::string file, std::string field, std::string expected, std::string got = {});

  /// A line written in full at the throw site (it names the file and the field itself); the
  /// file, the field and, where the code knows it, the expected value are kept for callers that
  /// act on them (sbrank's exception attributes).
  static InputError described(std::string file, std::string field, const std::string& line,
                              std::string expected = {});

  const std::string& file() const noexcept { return file_; }
  const std::string& field() const noexcept { return field_; }
  /// Empty for a described() error given none (its line says what went wrong).
  const std::string& expected() const noexcept { return expected_; }

 protected:
  struct Described {};
  InputError(Described, std::string file, std::string field, const std::string& line,
             std::string expected);

 private:
  std::string file_, field_, expected_;
};

/// The file is not of the expected format at all: it is missing or unreadable, is not HDF5 /
/// .npy / idx / a checkpoint, has the wrong magic or version, or ends early.
class FormatError : public InputError {
 public:
  FormatError(std::string file, std::string field, std::string expected, std::string got = {})
      : InputError(std::move(file), std::move(field), std::move(expected), std::move(got)) {}
  static FormatError described(std::string file, std::string field, const std::string& line,
                               std::string expected = {});

 private:
  FormatError(Described tag, std::string file, std::string field, const std::string& line,
              std::string expected)
      : InputError(tag, std::move(file), std::move(field), line, std::move(expected)) {}
};

/// A command-line option, a config override or a function argument outside what it accepts.
class OptionError : public Error {
 public:
  /// The standard line: "OPTION: expected EXPECTED" and ", got GOT" when got is not empty.
  OptionError(std::string option, std::string expected, std::string got = {});
  /// A line written in full at the throw site, naming the option itself; `expected` where the
  /// code knows it.
  static OptionError described(std::string option, const std::string& line,
                               std::string expected = {});

  /// "SETTING: expected EXPECTED", SETTING the option as the user gave it ("--gram foo", or
  /// sbrank's "input='foo'"): the line of most option checks, with option() and expected() set.
  static OptionError for_setting(std::string option, const std::string& setting,
                                 std::string expected);

  const std::string& option() const noexcept { return option_; }
  /// What the option accepts; empty for a described() error given none.
  const std::string& expected() const noexcept { return expected_; }

 private:
  struct Described {};
  OptionError(Described, std::string option, const std::string& line, std::string expected);
  std::string option_, expected_;
};

/// Creating, writing, flushing, closing or renaming an output failed (ENOSPC, EIO, a read-only
/// directory). The previous file under the final name, if any, is intact.
class WriteError : public Error {
 public:
  /// "FILE: REASON" unless reason already starts with the file's name.
  WriteError(std::string file, const std::string& reason);
  /// A line written in full at the throw site (e.g. naming a temporary and a final path).
  static WriteError described(std::string file, const std::string& line);
  const std::string& file() const noexcept { return file_; }

 private:
  struct Described {};
  WriteError(Described, std::string file, const std::string& line)
      : Error(line), file_(std::move(file)) {}
  std::string file_;
};

/// What a binary prints and returns for an exception: the first line of its message (prefixed
/// with the program's name by the caller) and the exit status.
struct ErrorReport {
  enum class Kind { input, format, option, write, memory, internal, other };
  Kind kind = Kind::other;
  std::string line;  // one line, no trailing newline
  int status = kExitBadInput;
};

/// The one mapping from an exception to its report. For std::bad_alloc the line is "out of
/// memory (HINT)", e.g. HINT = "a smaller batch_size fits"; "(std::bad_alloc)" without a hint.
/// Never throws.
ErrorReport error_report(const std::exception_ptr& error, const std::string& memory_hint = {});

/// Prints "PROGRAM: LINE" (or "error: LINE" for an empty program) on stderr after flushing stdout,
/// and returns the report's exit status: the end of every binary's catch.
int report_error(const std::string& program, const std::exception_ptr& error,
                 const std::string& memory_hint = {});

/// The first line of a message (a library's what() can hold a backtrace or a trace of calls).
std::string first_line(const std::string& text);

}  // namespace sb
