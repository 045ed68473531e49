// SPDX-License-Identifier: Apache-2.0
// A command's result folder (`stoker study`'s study.json, `stoker qualify`'s qualify.json,
// each with its report.html): its default name, the check before any work that it can be
// written and holds no earlier result, atomic writes, and what every such result records of
// the command and its datasets. Not the results themselves: each command builds its own.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace stoker {

struct Index;

// The process's command line, its arguments joined by spaces (/proc/self/cmdline).
std::string command_line();
// "<prefix>-YYYYmmdd-HHMMSS" (UTC now): a result folder's default name.
std::string default_out(const std::string& prefix);
// Creates `dir` and proves it writable before any work; refuses (a usage error) to replace
// an earlier result (`result_file` in it, e.g. "study.json") without `force`.
void prepare_out(const std::string& dir, bool force, const std::string& result_file);
// Writes `text` to `path` through a temporary file and a rename: a reader (or an interrupt)
// never sees half a file.
void write_atomically(const std::string& path, const std::string& text);
// Writes `doc` as dir/`result_file` and, rendered by `render`, dir/report.html, each
// atomically, the JSON first. A report that cannot be rendered is a warning on stderr, not a
// failure: the numbers are safe in the JSON, and `stoker report` renders them later.
void write_result_and_report(const std::string& dir, const std::string& result_file,
                             const nlohmann::json& doc,
                             const std::function<std::string(const nlohmann::json&)>& render);
// "256px" -> 256; 0 when the name carries no resolution.
int resolution_of(const std::string& name);
// {name, root, resolution (null: unknown), images, classes, bytes, mean_bytes, min_bytes,
// max_bytes}: a dataset as study.json and qualify.json describe it.
nlohmann::json dataset_json(const std::string& root, const Index& index, int resolution);

}  // namespace stoker
