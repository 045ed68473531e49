// SPDX-License-Identifier: Apache-2.0
#include "tools/study/study_spec.h"

#include <fmt/format.h>

#include <charconv>

#include "common/error.h"
#include "models/resnet.h"
#include "tools/bench_common.h"

namespace stoker {

namespace {

bool parse_int(const std::string& s, int& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out > 0;
}

// "N" or "A..B" -> the counts; false when it is neither.
bool parse_counts(const std::string& s, std::vector<int>& out) {
  const size_t dots = s.find("..");
  int a = 0, b = 0;
  if (dots == std::string::npos) {
    if (!parse_int(s, a)) return false;
    out = {a};
    return true;
  }
  if (!parse_int(s.substr(0, dots), a) || !parse_int(s.substr(dots + 2), b) || b < a ||
      b - a > 1024)
    return false;
  out.clear();
  for (int n = a; n <= b; ++n) out.push_back(n);
  return true;
}

}  // namespace

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

std::vector<ReaderSpec> parse_study_readers(const std::string& text) {
  std::vector<ReaderSpec> out;
  std::string kind;  // of the last token, for bare counts after it
  std::string uring_threads;
  for (const std::string& token : split(text, ',')) {
    std::string k = kind, arg = token;
    const size_t colon = token.find(':');
    if (token == "serial") {
      out.push_back(parse_reader("serial"));
      kind.clear();
      continue;
    }
    if (colon != std::string::npos) {
      k = token.substr(0, colon);
      arg = token.substr(colon + 1);
      uring_threads.clear();
      if (k == "uring") {
        const size_t c2 = arg.find(':');
        if (c2 != std::string::npos) {
          uring_threads = arg.substr(c2);
          arg = arg.substr(0, c2);
        }
      }
    } else if (kind.empty()) {
      fail(
          "--readers: '{}' is not a reader: expected serial, threads:N, processes:N, "
          "uring:QD[:T], a count after one of them, or A..B",
          token);
    }
    std::vector<int> counts;
    if ((k != "threads" && k != "processes" && k != "uring") || !parse_counts(arg, counts))
      fail(
          "--readers: '{}' is not a reader: expected serial, threads:N, processes:N, "
          "uring:QD[:T], a count after one of them, or A..B",
          token);
    for (int n : counts) out.push_back(parse_reader(fmt::format("{}:{}{}", k, n, uring_threads)));
    kind = k;
  }
  if (out.empty()) fail("--readers: no reader given");
  return out;
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

}  // namespace stoker
