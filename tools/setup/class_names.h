// SPDX-License-Identifier: Apache-2.0
// The class names a model was trained on, kept in its checkpoint's metadata ("class_names",
// a JSON array in label order), so that evaluating, validating or resuming on a dataset
// whose labels mean other classes is refused instead of printing a meaningless top-1. It
// does not read datasets or checkpoints itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/checkpoint.h"

namespace stoker {

// Records `names` (label -> class name) in the checkpoint's metadata.
void store_class_names(Checkpoint& ckpt, const std::vector<std::string>& names);

// The names stored, or nothing for a checkpoint that holds none (written before they were
// stored, or converted from torchvision). stoker::Error naming `path` when malformed.
std::optional<std::vector<std::string>> stored_class_names(const Checkpoint& ckpt,
                                                           std::string_view path);

// Refuses (stoker::Error) a dataset whose class names differ from the model's, naming both
// sources and the first label that differs. `what` starts the message ("eval", "train:
// --val"). A list file without class names ("0", "1", ...) is compared by count alone.
void check_class_names(std::string_view what, const std::vector<std::string>& model,
                       std::string_view model_from, const std::vector<std::string>& data,
                       std::string_view data_from);

// One "# warning:" line on stdout when `empty` (class directories of `data` that hold no
// image) is not: their labels are kept, outputs no sample trains, where torchvision's
// ImageFolder refuses such a folder (FileNotFoundError). bench, train and eval print it.
void warn_empty_classes(const std::vector<std::string>& empty, std::string_view data);

}  // namespace stoker
