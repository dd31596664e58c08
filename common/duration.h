#pragma once
// The one way every binary prints a duration (progress lines, ETAs, epoch times): "42s",
// "3m05s", "1h02m03s"; "?" for a negative or non-finite value (an ETA not known yet).
// pipeline/durations.py prints the same format for the Python side.

#include <string>

namespace sb {

std::string format_duration(double seconds);

}  // namespace sb
