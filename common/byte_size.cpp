#include "common/byte_size.h"

#include <cmath>
#include <cstdio>

namespace sb {

std::string format_bytes(double bytes) {
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  char text[48];
  auto in = [&text](double value, const char* unit) {
    // "%.3g" would print 1023 as "1.02e+03": from 100 up the integer part has the three digits
    std::snprintf(text, sizeof text, value >= 100 ? "%.0f %s" : "%.3g %s", value, unit);
    return std::string(text);
  };
  if (bytes >= gib) return in(bytes / gib, "GiB");
  if (bytes >= mib) return in(bytes / mib, "MiB");
  return in(std::ceil(bytes / kib), "KiB");
}

}  // namespace sb
