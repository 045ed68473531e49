// SPDX-License-Identifier: Apache-2.0
// Facts about the machine and this process for report headers and memory checks.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace stoker {

std::string cpu_model();
int online_cpus();
std::string kernel_release();
uint64_t memory_bytes();       // physical memory
double process_cpu_seconds();  // user + system time of all threads so far (and reaped children)
// User + system time of live process `pid` so far (/proc/<pid>/stat); 0 when it cannot be read
// (gone, or not Linux). For children not yet reaped, which process_cpu_seconds() leaves out.
double pid_cpu_seconds(int pid);

// {cpu, online_cpus, memory_bytes, kernel}: the machine, as every command's --json context
// carries it (merged into the context, so the keys are the same in each).
nlohmann::json machine_context();

}  // namespace stoker
