// SPDX-License-Identifier: Apache-2.0
// The report's charts, each an HTML <figure> of inline SVG panels rendered from the study
// result. Every chart's <svg> carries data-chart="NAME" and every series a
// <g data-series="LABEL">, so a test can count what a person sees. Layout only: the
// numbers come straight from the cells, the words from conclusions.cc.
#pragma once

#include <string>

#include "tools/report/study_json.h"

namespace stoker::report {

// Time for the timed steps against reader count: one panel per (storage, consumer),
// one series per (dataset, reader kind); colour = dataset, marker = reader kind.
std::string steps_chart(const Json& study);
// Read bandwidth per storage: one panel per dataset, grouped bars (one bar per reader).
std::string bandwidth_chart(const Json& study);
// Step time stacked (wait, copy, compute, gap): one panel per (dataset, consumer), a bar per cell.
std::string breakdown_chart(const Json& study);
// A table of each cell's step time per batch size, for cells whose size changed (a size
// schedule); empty when none did.
std::string per_size_table(const Json& study);
// A slow and a fast step side by side, a lane per loader thread, for the serial cell of the
// largest resolution and the best parallel cell beside it.
std::string trace_excerpt(const Json& study);

}  // namespace stoker::report
