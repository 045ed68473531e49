// SPDX-License-Identifier: Apache-2.0
#include "tools/json_document.h"

#include <string>

#include "common/error.h"
#include "common/system_info.h"

namespace stoker {

nlohmann::json context_and_result(nlohmann::json flat,
                                  std::initializer_list<std::string_view> context_keys) {
  nlohmann::json context = machine_context();
  for (const std::string_view key : context_keys) {
    const std::string k(key);
    STOKER_CHECK_MSG(flat.contains(k), "no '{}' in the summary", k);
    context[k] = std::move(flat[k]);
    flat.erase(k);
  }
  return {{"context", std::move(context)}, {"results", nlohmann::json::array({std::move(flat)})}};
}

}  // namespace stoker
