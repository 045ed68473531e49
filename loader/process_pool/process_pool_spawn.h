// SPDX-License-Identifier: Apache-2.0
// Starting and ending stoker-worker processes. A worker is a fresh program started with
// posix_spawn, never a fork of this one: the parent has threads, and a forked child would
// inherit their locks but not the threads. It finds its socket and the memfds at fixed
// descriptor numbers (worker_protocol.h). Every wait here has a bound.
#pragma once

#include <sys/types.h>

#include <string>

namespace stoker {

struct WorkerSetup;

// The stoker-worker executable: $STOKER_WORKER, else next to /proc/self/exe, else where the
// build put it. Throws stoker::Error naming every place it looked.
std::string find_worker_binary();

struct WorkerProcess {
  pid_t pid = -1;
  int socket = -1;  // the parent's end of the SOCK_SEQPACKET pair
};

// Starts one worker and sends it `setup`; does not wait for it. Throws naming `exe`.
WorkerProcess spawn_worker(const std::string& exe, int index_fd, int batch_fd,
                           const WorkerSetup& setup);
// Waits up to timeout_ms for the worker's ready message. Throws, having ended the worker, if
// it exits, answers wrongly or not at all.
void await_ready(WorkerProcess& w, const std::string& exe, int timeout_ms);
// Closes the socket (a worker exits at end of stream) and reaps the process, killing it if it
// has not exited after grace_ms. Returns its wait status, or -1 if it could not be known.
int end_worker(WorkerProcess& w, int grace_ms);
// "signal 9 Killed", "exit status 3".
std::string describe_exit(int status);

}  // namespace stoker
