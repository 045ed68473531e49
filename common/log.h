// SPDX-License-Identifier: Apache-2.0
// One way out for what the library says while it works (a skipped file, a reader that fell
// back, a batch that is late): a warning or a note goes to the installed sink, by default a
// line "stoker: warning: TEXT" (or "stoker: TEXT") on stderr. The Python module installs its
// own so that the lines reach Python's `logging` (logger "stoker") where a user can redirect
// them. Errors are not logged: they are thrown (common/error.h) and the caller decides.
#pragma once

#include <functional>
#include <string>

namespace stoker {

enum class LogLevel { note, warning };

// Called with the level and the text (no "stoker:" prefix, no newline), from any thread, one
// call at a time. An empty sink restores the stderr default.
using LogSink = std::function<void(LogLevel, const std::string&)>;
void set_log_sink(LogSink sink);

void log_warning(const std::string& text);
void log_note(const std::string& text);

}  // namespace stoker
