#pragma once
// The one way every binary prints a duration (progress lines, ETAs, epoch times): "42s",
// "3m05s", "1h02m03s"; "?" for a negative or non-finite value (an ETA not known yet).
// pipeline/durations.py prints the same format for the Python side.

#include <chrono>
#include <string>

namespace sb {

std::string format_duration(double seconds);

/// Seconds on the steady clock since `start` (epoch times, rates, ETAs).
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace sb
