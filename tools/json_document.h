// SPDX-License-Identifier: Apache-2.0
// The one shape of every `stoker ... --json` document: {"context": {...}, "results": [...]}
// (as nccl-tests and google/benchmark write theirs). The context says what ran and where
// (tool, version, machine, options); each result is one measured run.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>

namespace stoker {

// {context: machine_context() (common/system_info.h) and the `context_keys` of `flat`,
// results: [the rest of `flat`]}, for a command that measures one run and builds its summary
// as one object.
nlohmann::json context_and_result(nlohmann::json flat,
                                  std::initializer_list<std::string_view> context_keys);

}  // namespace stoker
