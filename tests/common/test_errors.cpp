// common/errors.h: each typed error's line, its structured fields, and the one mapping from an
// exception to the line and exit status every binary prints.

#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/errors.h"

namespace {

template <class E>
sb::ErrorReport report_of(const E& error, const std::string& hint = {}) {
  return sb::error_report(std::make_exception_ptr(error), hint);
}

}  // namespace

TEST_CASE(
    "errors: an input error's line names the file, the field, the expected and the actual value") {
  const sb::InputError e("lp.h5", "attribute 'd'", "an integer >= 1", "0");
  CHECK(std::string(e.what()) == "lp.h5: attribute 'd': expected an integer >= 1, got 0");
  CHECK(e.file() == "lp.h5");
  CHECK(e.field() == "attribute 'd'");
  CHECK(e.expected() == "an integer >= 1");
  // Without what was found, the line stops at the expected value.
  CHECK(std::string(sb::InputError("a.toml", "lr", "> 0").what()) == "a.toml: lr: expected > 0");
  // A config key whose file the caller names: no empty "FILE: " in front.
  CHECK(std::string(sb::InputError("", "heads", "a divisor of 16", "3").what()) ==
        "heads: expected a divisor of 16, got 3");
}

TEST_CASE("errors: a described error keeps the thrower's line and still carries file and field") {
  const auto e = sb::FormatError::described("x.npy", "header", "x.npy: not a .npy file (magic)");
  CHECK(std::string(e.what()) == "x.npy: not a .npy file (magic)");
  CHECK(e.file() == "x.npy");
  CHECK(e.field() == "header");
  CHECK(e.expected().empty());
  const auto o = sb::OptionError::described("--threads", "--threads must be >= 1, got 0");
  CHECK(std::string(o.what()) == "--threads must be >= 1, got 0");
  CHECK(o.option() == "--threads");
  CHECK(o.expected().empty());
  // Where the code knows what it wanted, the expected value travels beside the line.
  const auto i = sb::InputError::described("a.toml", "lr",
                                           "a.toml:3:5: key 'lr': expected a "
                                           "float, got a string",
                                           "a float");
  CHECK(std::string(i.what()) == "a.toml:3:5: key 'lr': expected a float, got a string");
  CHECK(i.expected() == "a float");
  CHECK(
      sb::FormatError::described("x.idx", "data", "x.idx: ends early", "60000 images").expected() ==
      "60000 images");
}

TEST_CASE("errors: an option check's line is the setting as given, then what it expected") {
  const auto o = sb::OptionError::for_setting("--gram", "--gram diagonal", "rows, columns or auto");
  CHECK((std::string(o.what()) == "--gram diagonal: expected rows, columns or auto" &&
         o.option() == "--gram" && o.expected() == "rows, columns or auto"));
  // The standard constructor carries it too.
  CHECK(sb::OptionError("--words", "an integer >= 0", "-1").expected() == "an integer >= 0");
}

TEST_CASE("errors: the hierarchy lets a caller catch by kind") {
  // A format error is an input error, every typed error an sb::Error and a std::runtime_error:
  // code that catches the broad kind keeps working, code that needs the narrow one can have it.
  CHECK_THROWS_AS(throw sb::FormatError("f", "magic", "SBLP"), sb::InputError);
  CHECK_THROWS_AS(throw sb::InputError("f", "d", "1"), sb::Error);
  CHECK_THROWS_AS(throw sb::OptionError("--k", "1"), std::runtime_error);
  CHECK_THROWS_AS(throw sb::WriteError("out.h5", "disk full"), sb::Error);
}

TEST_CASE("errors: a write error names the file once") {
  CHECK(std::string(sb::WriteError("out.h5", "no space left on device").what()) ==
        "out.h5: no space left on device");
  // A reason that already starts with the file is not prefixed twice.
  CHECK(std::string(sb::WriteError("out.h5", "out.h5: close failed").what()) ==
        "out.h5: close failed");
  CHECK(sb::WriteError("out.h5", "x").file() == "out.h5");
  // A described write error keeps its line as written and still carries the file.
  const auto moved = sb::WriteError::described("out.h5", "cannot rename out.h5.tmp to out.h5: EIO");
  CHECK(std::string(moved.what()) == "cannot rename out.h5.tmp to out.h5: EIO");
  CHECK(moved.file() == "out.h5");
}

TEST_CASE("errors: every exception maps to its kind, one line and exit status 2 (a defect: 70)") {
  using Kind = sb::ErrorReport::Kind;
  CHECK(report_of(sb::FormatError("f", "magic", "SBLP")).kind == Kind::format);
  CHECK(report_of(sb::InputError("f", "d", "1")).kind == Kind::input);
  CHECK(report_of(sb::OptionError("--k", "1")).kind == Kind::option);
  CHECK(report_of(sb::WriteError("f", "full")).kind == Kind::write);
  CHECK(report_of(std::bad_alloc()).kind == Kind::memory);
  CHECK(report_of(std::out_of_range("library")).kind == Kind::other);
  for (const auto& r : {report_of(sb::InputError("f", "d", "1")), report_of(std::bad_alloc()),
                        report_of(std::out_of_range("library"))})
    CHECK(r.status == sb::kExitBadInput);
  CHECK(report_of(std::logic_error("x")).status == sb::kExitInternal);
  // Only the first line of a message reaches the user (a library's what() may hold a trace).
  const auto multi = report_of(std::runtime_error("first\nsecond\nthird"));
  CHECK(multi.line == "first");
  // Out of memory says so and adds the caller's hint.
  CHECK(report_of(std::bad_alloc(), "see --budget-gb").line == "out of memory (see --budget-gb)");
  CHECK(report_of(std::bad_alloc()).line == "out of memory (std::bad_alloc)");
  // Something that is not a std::exception still gives a line and the status.
  const auto unknown = sb::error_report(std::make_exception_ptr(42));
  CHECK(unknown.line == "unknown error");
  CHECK(unknown.status == sb::kExitBadInput);
}

TEST_CASE("errors: report_error prints one line prefixed with the program and returns the status") {
  // stderr is redirected to a temporary file for the call and read back.
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  std::fflush(stderr);
  int status = 0;
  {
    // Point stderr at the capture file through dup2 on the descriptors.
    const int err_fd = fileno(stderr);
    const int copy = dup(err_fd);
    REQUIRE(copy >= 0);
    REQUIRE(dup2(fileno(capture), err_fd) >= 0);
    status = sb::report_error("rank_analysis",
                              std::make_exception_ptr(sb::InputError("a.h5", "/log_probs", "2-D")));
    std::fflush(stderr);
    REQUIRE(dup2(copy, err_fd) >= 0);
    close(copy);
  }
  std::rewind(capture);
  char buffer[256] = {};
  const size_t n = std::fread(buffer, 1, sizeof buffer - 1, capture);
  std::fclose(capture);
  CHECK(status == 2);
  CHECK(std::string(buffer, n) == "rank_analysis: a.h5: /log_probs: expected 2-D\n");
}

TEST_CASE("errors: a defect (our std::logic_error) exits with its own status, not bad input") {
  const auto defect = sb::error_report(std::make_exception_ptr(std::logic_error("no <eos>")));
  CHECK(defect.status == sb::kExitInternal);
  CHECK(defect.kind == sb::ErrorReport::Kind::internal);
  CHECK(defect.line.find("internal error") == 0);
  CHECK(defect.line.find("no <eos>") != std::string::npos);
  // The library's subclasses of logic_error (std::stoi's invalid_argument) are input it was given.
  const auto parse = sb::error_report(std::make_exception_ptr(std::invalid_argument("stoi")));
  CHECK(parse.status == sb::kExitBadInput);
  CHECK(sb::error_report(std::make_exception_ptr(sb::InputError("f", "d", "1"))).status ==
        sb::kExitBadInput);
}

TEST_CASE("errors: --help's exit-status paragraph comes from the named statuses") {
  const std::string text = sb::exit_statuses_text(
      {sb::kExitOk, sb::kExitBadInput, sb::kExitBoundExceeded, sb::kExitInternal});
  CHECK(text.find("Exit status: 0 done, 2 bad input") == 0);
  CHECK(text.find(", 3 --check found") != std::string::npos);
  CHECK(text.find(", 70 internal error") != std::string::npos);
  CHECK(text.find("130") == std::string::npos);  // only the statuses asked for
}
