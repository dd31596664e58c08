#pragma once
// The one way every binary prints an amount of memory or disk (the analysis's memory plans, the
// writers' free-space refusals): binary units with three significant digits, "298 GiB",
// "2.98 GiB", "12.5 MiB", "3 KiB" (a partial KiB rounds up, so a non-zero size never reads "0").

#include <string>

namespace sb {

std::string format_bytes(double bytes);

}  // namespace sb
