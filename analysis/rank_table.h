#pragma once
// The human output of rank_analysis: one table row per analysed file, then the lines that
// explain it (how the input was read, which criterion to trust, bound violations, resolution and
// certificate warnings).

#include <vector>

#include "contract/rank_result.h"

namespace sb::analysis {

/// Prints the table and its notes on stdout.
void print_table(const std::vector<contract::RankResult>& results);

}  // namespace sb::analysis
