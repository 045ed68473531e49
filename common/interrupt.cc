// SPDX-License-Identifier: Apache-2.0
#include "common/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace stoker {

namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "read from a signal handler");

void write_stderr(const char* s) {
  // Only async-signal-safe calls in here: write, _exit.
  const ssize_t n = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)n;
}

void on_signal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) {
    write_stderr("\nstoker: interrupted again: exiting now\n");
    ::_exit(128 + sig);
  }
  // The leading newline leaves a progress line drawn in place intact.
  write_stderr(
      "\nstoker: interrupted: finishing the current step and saving what is done "
      "(again to quit now)\n");
}

}  // namespace

void install_interrupt_handlers() {
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

bool interrupted() {
  return g_signal.load(std::memory_order_relaxed) != 0;
}

int interrupt_signal() {
  return g_signal.load(std::memory_order_relaxed);
}

int interrupt_exit_code() {
  const int s = interrupt_signal();
  return s ? 128 + s : 0;
}

void adopt_interrupt(int signal) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signal);
}

}  // namespace stoker
