// SPDX-License-Identifier: Apache-2.0
// `stoker qualify`'s inputs as the command line gives them (the storages with their links,
// the accelerator profile, the modes), the search over the number of accelerators, and the
// rule naming what bounds a step of it. Parsing and pure arithmetic only: running N
// accelerators is qualify_fleet.h, the search and its output are cmd_qualify.cc.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/emulated_accelerator.h"

namespace stoker {

// Where the accelerators' bytes come from: the local dataset (page cache warm, or read cold
// with O_DIRECT-like eviction), or an NFS-Ganesha server of our own on this machine, over
// loopback ("nfs") or in a network namespace behind a veth pair shaped to `link`
// ("nfs@10gbit", "nfs@unshaped"; scripts/nfs_serve.sh --netns --link).
// A dataset given as an nfs:// URL is read where it is, from its own server ("nfs-url": not
// ours to evict, shape or measure), whatever --storage says.
struct QualifyStorage {
  enum class Kind { local, local_cold, nfs, nfs_url } kind = Kind::local;
  std::string link;  // nfs: "" loopback, else the --link value
  std::string name;  // as given
};
// "local,local-cold,nfs,nfs@unshaped,nfs@10gbit,nfs@1gbit" (any subset, in the order given;
// a link is 1gbit, 10gbit, 25gbit, any Ngbit or Nmbit, or unshaped). UsageError otherwise.
std::vector<QualifyStorage> parse_qualify_storages(const std::string& text);

// What one accelerator computes: images/s, from an emulation spec (resnet50-h100: MLPerf
// Storage's 1,786 img/s; a rate; T/N) or a measured trainer's `train --json` file.
struct AcceleratorProfile {
  std::string name;  // "resnet50-h100", "6532img/s", "cuda resnet50 f16 (run.json)"
  EmulatedAccelerator accelerator;
  std::string from;  // "preset", "rate" or the JSON file's path
  std::string note;  // "" or a caveat on the measured rate (it included data wait)
};
// A path ending in .json is read as a `train --json` document; anything else is an emulation
// spec. UsageError naming the file and the key when the file is no trainer's result.
AcceleratorProfile parse_accelerator_profile(const std::string& spec);
// The profile of a parsed `train --json` document (`path` names it in errors).
AcceleratorProfile profile_from_train_json(const nlohmann::json& doc, const std::string& path);

// Real decode (the RandomResizedCrop pipeline) or read only (MLPerf Storage's setting: the
// files' bytes reach the accelerator undecoded, the loader's --no-decode).
enum class QualifyMode { decode, read };
const char* mode_name(QualifyMode m);
// "decode", "read" or "decode,read".
std::vector<QualifyMode> parse_qualify_modes(const std::string& text);

// MLPerf Storage's criterion: every accelerator at AU >= 90%.
constexpr double kAuTarget = 0.90;

// The search over N, the number of accelerators: 1, 2, 4, ... until one fails or `max`,
// then bisection between the largest that held and the smallest that failed. `held`: the
// largest N that held so far (0: none); `failed`: the smallest that failed (0: none).
// Returns the next N to run, or 0 when the answer is `held`.
int next_accelerators(int held, int failed, int max);

// What bounds a fleet (docs/QUALIFY.md, "What bounds it"), first match:
//   "link"    its MB/s reached 85% of the link's measured bandwidth;
//   "server"  the host's cores are busy (>= 85%: the machine's, anyone's work counted) and
//             the NFS server uses more of them than the loaders;
//   "decode"  the host's cores are busy and the loaders use more of them, decoding;
//   "cpu"     the same, read only: the loaders' reading (system calls, copies);
//   "latency" none of these: the storage's answer time for the requests in flight (the disk
//             read cold, the server's round trip): more requests in flight may help.
struct BoundFacts {
  bool decode = true;
  double mb_per_s = 0;
  double link_mb_per_s = 0;  // 0: no measured link (local, loopback)
  double loader_cores = 0, server_cores = 0;
  double machine_cores = -1;  // every process's busy cores; < 0: unknown (ours alone count)
  double host_cores = 1;
};
// Cores count as full at 85%: a fleet that waits for data never keeps every core busy (its
// accelerators sleep, its readers wait for replies); measured, decode-bound fleets on 2 cores
// kept 1.75-1.96 busy.
constexpr double kLinkBound = 0.85, kCoresBound = 0.85;
std::string qualify_bound(const BoundFacts& f);

}  // namespace stoker
