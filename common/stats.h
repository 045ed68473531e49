// SPDX-License-Identifier: Apache-2.0
// Order statistics of a small sample held whole (one figure per step, per run, per repeat):
// the q-quantile and the median that tables and JSON print. Not a histogram: a stream of
// unknown length (per-batch waits, gaps) goes to common/histogram.h instead.
#pragma once

#include <vector>

namespace stoker {

// The sorted sample's element at floor(q * n), the last for q = 1; 0 for an empty sample.
double quantile(std::vector<double> sample, double q);
// The middle element, or the mean of the middle two for an even count; 0 for an empty sample.
double median(std::vector<double> sample);

}  // namespace stoker
