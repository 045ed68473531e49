// SPDX-License-Identifier: Apache-2.0
#include "tools/setup/class_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace stoker {
namespace {

constexpr const char* kKey = "class_names";

// A list file without `# class` lines names its classes by label: "0", "1", ...
bool numbered(const std::vector<std::string>& names) {
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] != std::to_string(k)) return false;
  return true;
}

// "10 classes: c00, c01, c02, ..., c09": enough to recognise a dataset.
std::string summary(const std::vector<std::string>& names) {
  std::string list;
  for (size_t k = 0; k < names.size(); ++k) {
    if (k == 3 && names.size() > 4) {
      list += ", ...";
      k = names.size() - 1;
    }
    list += fmt::format("{}{}", list.empty() ? "" : ", ", names[k]);
  }
  return fmt::format("{} classes: {}", names.size(), list);
}

}  // namespace

void store_class_names(Checkpoint& ckpt, const std::vector<std::string>& names) {
  ckpt.metadata[kKey] = nlohmann::json(names).dump();
}

std::optional<std::vector<std::string>> stored_class_names(const Checkpoint& ckpt,
                                                           std::string_view path) {
  const auto it = ckpt.metadata.find(kKey);
  if (it == ckpt.metadata.end()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (!j.is_array() ||
      !std::all_of(j.begin(), j.end(), [](const auto& v) { return v.is_string(); }))
    fail("{}: metadata '{}' is '{}'; expected a JSON array of class names", path, kKey,
         it->second.substr(0, 80));
  return j.get<std::vector<std::string>>();
}

void check_class_names(std::string_view what, const std::vector<std::string>& model,
                       std::string_view model_from, const std::vector<std::string>& data,
                       std::string_view data_from) {
  if (model == data) return;
  if ((numbered(model) || numbered(data)) && model.size() == data.size()) return;
  std::string first;
  for (size_t k = 0; k < std::min(model.size(), data.size()); ++k)
    if (model[k] != data[k]) {
      first = fmt::format("; label {} is '{}' there and '{}' here", k, model[k], data[k]);
      break;
    }
  fail(
      "{}: {} has {} but {} was trained on {}{}: its labels would mean other classes (give the "
      "dataset the model was trained on)",
      what, data_from, summary(data), model_from, summary(model), first);
}

void warn_empty_classes(const std::vector<std::string>& empty, std::string_view data) {
  if (empty.empty()) return;
  fmt::print(
      "# warning: {} class director{} of {} hold{} no image (first: {}): {} label{} kept, "
      "an output no sample trains (torchvision's ImageFolder refuses such a folder)\n",
      empty.size(), empty.size() == 1 ? "y" : "ies", data, empty.size() == 1 ? "s" : "",
      empty.front(), empty.size() == 1 ? "its" : "their", empty.size() == 1 ? " is" : "s are");
}

}  // namespace stoker
