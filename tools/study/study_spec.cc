// SPDX-License-Identifier: Apache-2.0
#include "tools/study/study_spec.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "models/resnet.h"
#include "tools/bench/bench_common.h"

namespace stoker {

const char* storage_name(StudyStorage s) {
  switch (s) {
    case StudyStorage::local:
      return "local";
    case StudyStorage::local_cold:
      return "local-cold";
    case StudyStorage::shards:
      return "shards";
    case StudyStorage::nfs:
      return "nfs";
    case StudyStorage::nfs_shards:
      return "nfs-shards";
  }
  return "?";
}

const char* StudyConsumer::kind_name() const {
  switch (kind) {
    case Kind::emulated:
      return "emulated";
    case Kind::cpu:
      return "cpu";
    case Kind::cuda:
      return "cuda";
  }
  return "?";
}

std::vector<StudyStorage> parse_study_storages(const std::string& text) {
  std::vector<StudyStorage> out;
  for (const std::string& s : split(text, ',')) {
    bool found = false;
    for (StudyStorage k : {StudyStorage::local, StudyStorage::local_cold, StudyStorage::shards,
                           StudyStorage::nfs, StudyStorage::nfs_shards}) {
      if (s == storage_name(k)) {
        out.push_back(k);
        found = true;
      }
    }
    if (!found)
      fail("--storage: unknown storage '{}': expected local, local-cold, shards, nfs, nfs-shards",
           s);
  }
  if (out.empty()) fail("--storage: no storage given");
  return out;
}

std::vector<StudyConsumer> parse_study_consumers(const std::string& text) {
  std::vector<StudyConsumer> out;
  for (const std::string& s : split(text, ',')) {
    const size_t colon = s.find(':');
    const std::string kind = s.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : s.substr(colon + 1);
    StudyConsumer c;
    c.name = s;
    if (kind == "emulated" && !arg.empty()) {
      c.kind = StudyConsumer::Kind::emulated;
      c.accelerator = parse_emulation(arg);
    } else if ((kind == "cpu" || kind == "cuda") && !arg.empty()) {
      c.kind = kind == "cpu" ? StudyConsumer::Kind::cpu : StudyConsumer::Kind::cuda;
      parse_resnet_arch(arg);  // names the valid ones when it is not one
      c.arch = arg;
    } else {
      fail("--consumer: '{}' is not a consumer: expected emulated:SPEC, cpu:ARCH or cuda:ARCH", s);
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) fail("--consumer: no consumer given");
  return out;
}

std::string study_bound(double data_wait_share, double read_ms, double decode_ms, double augment_ms,
                        double collate_ms) {
  if (data_wait_share < kComputeBoundWait) return "compute";
  const double loader = read_ms + decode_ms + augment_ms + collate_ms;
  if (loader <= 0) return "loader";
  if (read_ms >= 0.5 * loader) return "read";
  if (decode_ms >= 0.5 * loader) return "decode";
  return "loader";
}

CommandUse study_decode_use() {
  return {.help =
              "cpu, gpu or cpu,gpu: where the cuda consumers' cells decode; gpu cells (nvJPEG, "
              "as train --decode gpu) are one more reader in the report, "
              "`READER+gpu-decode`, for readers in this process",
          .words = {"cpu", "gpu"},
          .list = true};
}

std::vector<bool> parse_study_decodes(const std::string& text) {
  std::vector<bool> out;
  for (const std::string& w : command_words(*command_option("--decode"), study_decode_use(), text))
    out.push_back(parse_decode_mode(w) == DecodeMode::gpu);
  return out;
}

}  // namespace stoker
