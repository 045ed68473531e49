// SPDX-License-Identifier: Apache-2.0
// Ctrl-C and SIGTERM as a request to stop at the next safe point. Long work (a bench run, a
// training step, a study cell) polls `interrupted()`, stops, writes what it has finished and
// exits with `interrupt_exit_code()` (128 + signal, as a shell expects). A second signal exits
// at once. Not a cancellation framework: nothing is unwound for you.
#pragma once

#include "common/error.h"

namespace stoker {

// Installs the SIGINT/SIGTERM handlers (once; later calls do nothing). The first signal sets
// the flag and prints one line on stderr; the second ends the process with _exit.
void install_interrupt_handlers();

bool interrupted();
int interrupt_signal();     // SIGINT or SIGTERM once interrupted, else 0
int interrupt_exit_code();  // 128 + interrupt_signal(), or 0

// Thrown by work that stopped because of an interrupt, after it saved what it had; main()
// prints its message (what was kept) as a plain line, not as an error, and exits with
// interrupt_exit_code().
struct Interrupted : Error {
  explicit Interrupted(const std::string& what) : Error(what) {}
};

// For a process that learns from others that the whole job stops on `signal` (data-parallel
// ranks agree after each step, and only some got it): interrupted() from now on, and the same
// exit code, as if the signal had come here. Prints nothing; an earlier signal stays.
void adopt_interrupt(int signal);

}  // namespace stoker
