// SPDX-License-Identifier: Apache-2.0
#include "train/parallel/peer_liveness.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace stoker {
namespace {

// State and start time from /proc/<pid>/stat; false when the process does not exist. The
// command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
bool read_stat(int64_t pid, char& state, uint64_t& start_ticks) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int k = 3; fields >> field; ++k) {  // field 3 is the state, 22 the start time
    if (k == 3) state = field.empty() ? '?' : field[0];
    if (k == 22) {
      start_ticks = std::stoull(field);
      return true;
    }
  }
  return false;
}

}  // namespace

ProcessId this_process() {
  ProcessId id;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string text;
  if (boot && std::getline(boot, text) && !text.empty())
    std::strncpy(id.boot_id, text.c_str(), sizeof(id.boot_id) - 1);
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) == 0) id.pid_ns = uint64_t(ns.st_ino);
  id.pid = int64_t(::getpid());
  char state = 0;
  if (!read_stat(id.pid, state, id.start_ticks)) id.start_ticks = 0;
  return id;
}

Liveness liveness(const ProcessId& peer, const ProcessId& self) {
  const bool comparable = self.boot_id[0] != '\0' && self.pid_ns != 0 && self.start_ticks != 0 &&
                          peer.start_ticks != 0 && peer.pid > 0;
  if (!comparable || std::strncmp(peer.boot_id, self.boot_id, sizeof(self.boot_id)) != 0 ||
      peer.pid_ns != self.pid_ns)
    return Liveness::unknown;
  char state = 0;
  uint64_t start = 0;
  if (!read_stat(peer.pid, state, start)) return Liveness::ended;
  if (start != peer.start_ticks) return Liveness::ended;  // the pid was reused
  return state == 'Z' || state == 'X' ? Liveness::ended : Liveness::alive;
}

}  // namespace stoker
