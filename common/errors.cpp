#include "common/errors.h"

#include <typeinfo>

#include <cstdio>
#include <new>

namespace sb {

namespace {

std::string standard_line(const std::string& where, const std::string& expected,
                          const std::string& got) {
  std::string line = where + ": expected " + expected;
  if (!got.empty()) line += ", got " + got;
  return line;
}

}  // namespace

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

InputError::InputError(std::string file, std::string field, std::string expected, std::string got)
    : Error(standard_line(file.empty() ? field : file + ": " + field, expected, got)),
      file_(std::move(file)),
      field_(std::move(field)),
      expected_(std::move(expected)) {}

InputError::InputError(Described, std::string file, std::string field, const std::string& line,
                       std::string expected)
    : Error(line),
      file_(std::move(file)),
      field_(std::move(field)),
      expected_(std::move(expected)) {}

InputError InputError::described(std::string file, std::string field, const std::string& line,
                                 std::string expected) {
  return InputError(Described{}, std::move(file), std::move(field), line, std::move(expected));
}

FormatError FormatError::described(std::string file, std::string field, const std::string& line,
                                   std::string expected) {
  return FormatError(Described{}, std::move(file), std::move(field), line, std::move(expected));
}

OptionError::OptionError(std::string option, std::string expected, std::string got)
    : Error(standard_line(option, expected, got)),
      option_(std::move(option)),
      expected_(std::move(expected)) {}

OptionError::OptionError(Described, std::string option, const std::string& line,
                         std::string expected)
    : Error(line), option_(std::move(option)), expected_(std::move(expected)) {}

OptionError OptionError::described(std::string option, const std::string& line,
                                   std::string expected) {
  return OptionError(Described{}, std::move(option), line, std::move(expected));
}

OptionError OptionError::for_setting(std::string option, const std::string& setting,
                                     std::string expected) {
  const std::string line = setting + ": expected " + expected;
  return OptionError(Described{}, std::move(option), line, std::move(expected));
}

WriteError::WriteError(std::string file, const std::string& reason)
    : Error(reason.rfind(file, 0) == 0 ? reason : file + ": " + reason), file_(std::move(file)) {}

WriteError WriteError::described(std::string file, const std::string& line) {
  return WriteError(Described{}, std::move(file), line);
}

ErrorReport error_report(const std::exception_ptr& error, const std::string& memory_hint) {
  using Kind = ErrorReport::Kind;
  ErrorReport report;
  try {
    std::rethrow_exception(error);
  } catch (const FormatError& e) {
    report = {Kind::format, first_line(e.what()), kExitBadInput};
  } catch (const InputError& e) {
    report = {Kind::input, first_line(e.what()), kExitBadInput};
  } catch (const OptionError& e) {
    report = {Kind::option, first_line(e.what()), kExitBadInput};
  } catch (const WriteError& e) {
    report = {Kind::write, first_line(e.what()), kExitBadInput};
  } catch (const std::bad_alloc&) {
    report = {Kind::memory,
              "out of memory (" + (memory_hint.empty() ? "std::bad_alloc" : memory_hint) + ")",
              kExitBadInput};
  } catch (const std::logic_error& e) {
    // Our own std::logic_error is a defect: a state no input reaches (tests/common/
    // check_typed_errors.py holds every throw to it). The library's subclasses
    // (std::invalid_argument from std::stoi, std::out_of_range) stay bad input, as below.
    if (typeid(e) == typeid(std::logic_error))
      report = {Kind::internal,
                "internal error (a defect of this program, not of its input; please report it): " +
                    first_line(e.what()),
                kExitInternal};
    else
      report = {Kind::other, first_line(e.what()), kExitBadInput};
  } catch (const std::exception& e) {
    // A library's own exception (std::filesystem, CLI11, nlohmann::json) that no reader
    // translated: still one line and the bad-input status, as the standards ask.
    report = {Kind::other, first_line(e.what()), kExitBadInput};
  } catch (...) {
    report = {Kind::other, "unknown error", kExitBadInput};
  }
  return report;
}

std::string exit_statuses_text(std::initializer_list<int> statuses) {
  std::string text = "Exit status:";
  const char* sep = " ";
  for (int status : statuses) {
    std::string what;
    switch (status) {
      case kExitOk:
        what = "done";
        break;
      case kExitBadInput:
        what =
            "bad input, an unwritable output or not enough memory (one line on stderr naming "
            "the file or option, the field and what is expected; no output file)";
        break;
      case kExitBoundExceeded:
        what = "--check found a rank-bounded head above its bound";
        break;
      case kExitNonFinite:
        what = "non-finite loss (the last checkpoint kept)";
        break;
      case kExitInternal:
        what = "internal error (a defect: please report it)";
        break;
      case kExitInterrupted:
        what = "interrupted by Ctrl-C or SIGTERM (checkpoint saved; continue with --resume)";
        break;
      default:
        what = "?";
        break;
    }
    text += sep + std::to_string(status) + " " + what;
    sep = ", ";
  }
  return text + ".";
}

int report_error(const std::string& program, const std::exception_ptr& error,
                 const std::string& memory_hint) {
  const ErrorReport report = error_report(error, memory_hint);
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s\n", program.empty() ? "error" : program.c_str(),
               report.line.c_str());
  return report.status;
}

}  // namespace sb
