// SPDX-License-Identifier: Apache-2.0
// Whether another rank's process still exists, asked by a rank that waits for it after a
// signal: a peer that has ended will never join the collective (stop now, say which), a live
// one will (keep waiting, however slow it is under load). Exact for peers on this machine in
// this PID namespace (through /proc); for others it cannot tell ("unknown"). Not a failure
// detector for a network: no messages, no heartbeats.
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

// Who a process is, as bytes another rank can hold (exchanged with MPI_Allgather).
struct ProcessId {
  char boot_id[40] = {};  // /proc/sys/kernel/random/boot_id: this machine since it booted
  uint64_t pid_ns = 0;    // the inode of /proc/self/ns/pid: the PID namespace
  int64_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/<pid>/stat's starttime: a reused pid is another process
};

// This process. Fields it cannot read stay zero (then every peer is "unknown" to it).
ProcessId this_process();

enum class Liveness { alive, ended, unknown };

// `peer` as seen from `self`: alive while its process runs (a zombie has ended), unknown when
// it is on another machine or in another PID namespace, or when either side lacks /proc.
Liveness liveness(const ProcessId& peer, const ProcessId& self);

}  // namespace stoker
