// Summary statistics the benchmarks and comparisons report.
#pragma once

#include <vector>

namespace expnet {

// The middle value, or the mean of the two middle ones for an even count; 0 for
// no values.
double median(std::vector<double> values);

}  // namespace expnet
