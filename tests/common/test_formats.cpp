#include <cmath>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "common/byte_size.h"
#include "common/duration.h"

// Exact strings: these are what users read in progress lines and refusals, and what the Python
// side (pipeline/durations.py) and the tests that parse messages expect.

TEST_CASE("format_bytes: three significant digits in the largest binary unit that is >= 1") {
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  CHECK(sb::format_bytes(298 * gib) == "298 GiB");
  CHECK(sb::format_bytes(2.98 * gib) == "2.98 GiB");
  CHECK(sb::format_bytes(gib) == "1 GiB");
  CHECK(sb::format_bytes(12.5 * mib) == "12.5 MiB");
  CHECK(sb::format_bytes(1023 * mib) == "1023 MiB");  // just under a GiB: no exponent
  CHECK(sb::format_bytes(1500 * gib) == "1500 GiB");
  CHECK(sb::format_bytes(3 * kib) == "3 KiB");
  // 2000 x 3000 float32 + 2000 int64 targets: the dump test_full_disk.py refuses
  CHECK(sb::format_bytes(2000.0 * 3000 * 4 + 2000 * 8) == "22.9 MiB");
}

TEST_CASE("format_bytes: a partial KiB rounds up, so a non-zero size never prints as 0") {
  CHECK(sb::format_bytes(1) == "1 KiB");
  CHECK(sb::format_bytes(1025) == "2 KiB");
  CHECK(sb::format_bytes(0) == "0 KiB");
}

TEST_CASE("format_duration: seconds, then minutes, then hours, with two-digit fields") {
  CHECK(sb::format_duration(42) == "42s");
  CHECK(sb::format_duration(59.4) == "59s");
  CHECK(sb::format_duration(59.6) == "1m00s");
  CHECK(sb::format_duration(185) == "3m05s");
  CHECK(sb::format_duration(3723) == "1h02m03s");
  CHECK(sb::format_duration(0) == "0s");
}

TEST_CASE("format_duration: an unknown ETA (negative, NaN or infinite) prints as ?") {
  CHECK(sb::format_duration(-1) == "?");
  CHECK(sb::format_duration(std::numeric_limits<double>::quiet_NaN()) == "?");
  CHECK(sb::format_duration(std::numeric_limits<double>::infinity()) == "?");
}
