// SPDX-License-Identifier: Apache-2.0
// Facts about the machine and this process for report headers and memory checks.
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

std::string cpu_model();
int online_cpus();
std::string kernel_release();
uint64_t rss_bytes();          // resident set size now
double process_cpu_seconds();  // user + system time of all threads so far

}  // namespace stoker
