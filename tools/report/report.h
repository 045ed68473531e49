// SPDX-License-Identifier: Apache-2.0
// The study's report: one self-contained HTML document (inline SVG, no external scripts or
// fonts) rendered from a study result (docs/FORMATS.md, "study.json"), and the conclusions
// in words computed from its numbers. Pure functions of the JSON: `stoker study` calls them
// after every cell, `stoker report` on a saved result.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stoker {

std::string render_report(const nlohmann::json& study);

// `stoker qualify`'s report (qualify_report.cc) from its result (docs/FORMATS.md,
// "qualify.json"): the answer (accelerators fed against resolution, one line per storage and
// mode), the read MB/s, where the limit is, each link, each step of the search.
std::string render_qualify_report(const nlohmann::json& qualify);
// Its answer in words: one line per dataset, storage and mode.
std::vector<std::string> qualify_answer(const nlohmann::json& qualify);

// The start of every report page, to its <body>: title, viewport and the one style sheet
// (inline CSS).
std::string report_page_head(const std::string& title);

// The answer the report opens with (headline.cc): per size and storage, what bounds training
// (the storage, the decode CPU, the accelerator), the cores one accelerator needs and what
// more readers buy ("can't tell at this spread" where the spread is larger), then how
// loaded the machine was.
std::vector<std::string> answer(const nlohmann::json& study);

// Sentences a person can act on ("256px: more than 4 readers buy nothing: compute-bound").
std::vector<std::string> conclusions(const nlohmann::json& study);

}  // namespace stoker
