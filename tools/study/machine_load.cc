// SPDX-License-Identifier: Apache-2.0
#include "tools/study/machine_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "common/clock.h"

namespace stoker {

namespace {

double seconds(const timeval& t) {
  return double(t.tv_sec) + 1e-6 * double(t.tv_usec);
}

// User + system time of this process and of the children it has reaped (worker processes).
double own_cpu_seconds() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) +
         seconds(children.ru_stime);
}

// The first line of /proc/stat: every CPU's time by state, in clock ticks; busy is all but
// idle and iowait.
double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu")
    return -1;
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? (user + nice + system + irq + softirq + steal) / double(ticks) : -1;
}

nlohmann::json loadavg() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  if (!(in >> a >> b >> c)) return nullptr;
  return {a, b, c};
}

}  // namespace

LoadMark load_mark() {
  return {now_ns(), machine_busy_seconds(), own_cpu_seconds(), loadavg()};
}

nlohmann::json machine_load_json(const LoadMark& start) {
  const LoadMark now = load_mark();
  nlohmann::json j = {{"loadavg_start", start.loadavg}, {"loadavg_now", now.loadavg}};
  const double wall = (now.t_ns - start.t_ns) * 1e-9;
  if (wall <= 0 || start.machine_busy_s < 0 || now.machine_busy_s < 0) return j;
  const double machine = (now.machine_busy_s - start.machine_busy_s) / wall;
  const double own = (now.own_s - start.own_s) / wall;
  j["machine_cores_busy"] = machine;
  j["study_cores_busy"] = own;
  // Ticks and rusage are counted apart: a small negative difference is rounding.
  j["other_cores_busy"] = std::max(0.0, machine - own);
  return j;
}

}  // namespace stoker
