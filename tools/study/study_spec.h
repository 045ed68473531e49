// SPDX-License-Identifier: Apache-2.0
// The study's axes as the command line gives them (storages, consumers; readers are every
// command's --reader, tools/options/loader_options.h: parse_reader_list), the cell they combine
// into, and the rule that names what bounds a finished cell. Parsing and pure arithmetic only:
// running a cell is study_cell.h, the sweep is tools/study/cmd_study.cc.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loader/readers/reader_spec.h"
#include "tools/options/command_options.h"
#include "train/emulated_accelerator.h"

namespace stoker {

// Where a cell's bytes come from.
enum class StudyStorage { local, local_cold, shards, nfs, nfs_shards };
const char* storage_name(StudyStorage s);

// Who consumes the batches: an emulated accelerator, the CPU trainer (oneDNN) or the GPU
// trainer (cuDNN).
struct StudyConsumer {
  enum class Kind { emulated, cpu, cuda } kind = Kind::emulated;
  std::string name;                 // as given: "emulated:resnet50-h100", "cpu:resnet18"
  std::string arch;                 // cpu, cuda: the ResNet
  EmulatedAccelerator accelerator;  // emulated
  const char* kind_name() const;
};

// "local,local-cold,shards,nfs,nfs-shards" (any subset, in the order given).
std::vector<StudyStorage> parse_study_storages(const std::string& text);
// "emulated:SPEC" (train/emulated_accelerator.h: resnet50-h100, a rate, T/N), "cpu:ARCH",
// "cuda:ARCH" (resnet18, 34, 50, ...). A cuda consumer without a device is accepted here:
// its cells fail with the reason when they run.
std::vector<StudyConsumer> parse_study_consumers(const std::string& text);
// How the study takes --decode's words (tools/options/command_options.h): "cpu", "gpu" or
// "cpu,gpu", a list of cpu and gpu, each once (auto has no trainer to decide by).
CommandUse study_decode_use();
// Per entry of --decode, whether its cells decode on the GPU.
std::vector<bool> parse_study_decodes(const std::string& text);

// What bounds a finished cell (docs/STUDY.md, "The bound rule"):
//   data_wait_share < kComputeBoundWait          -> "compute" (the consumer is the limit)
//   else, of the loader's CPU time per image,
//     read >= half                               -> "read"    (storage)
//     decode >= half                             -> "decode"
//     otherwise                                  -> "loader"  (augment, collate, the reader's
//                                                              own overhead or too few workers)
constexpr double kComputeBoundWait = 0.10;
std::string study_bound(double data_wait_share, double read_ms, double decode_ms, double augment_ms,
                        double collate_ms);

}  // namespace stoker
