// SPDX-License-Identifier: Apache-2.0
// Faults injected into the loader's real I/O, for the source tests: short reads, EINTR and
// errors from pread(2); -EAGAIN/-EINTR, short and failed io_uring completions and an early
// end of file (through set_uring_completion_hook); refused or failed io_uring_submit, and an
// io_uring_queue_init that fails as under seccomp. pread, io_uring_submit and
// io_uring_queue_init are interposed by io_faults.cc, linked into the test executable; the
// sources' code paths are the product's own. Not a mock: every read still reaches the kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace stoker::test {

struct FaultPlan {
  std::string path_has;  // faults hit files whose path contains this; empty: every file
  // pread(2) on a hit file
  size_t pread_max = 0;      // at most this many bytes per call (short reads); 0: no limit
  bool pread_eintr = false;  // each (file, offset) fails once with EINTR before it is read
  int pread_errno = 0;       // every call fails with this errno (EIO)
  // io_uring completions of reads of a hit file
  int cqe_retry = 0;                 // EAGAIN or EINTR: each (file, offset) fails once with -it
  int cqe_max = 0;                   // at most this many bytes per completion (short reads)
  uint64_t cqe_eof_at = UINT64_MAX;  // the file ends here (it shrank after fstat)
  int cqe_errno = 0;                 // every completion fails with -cqe_errno (EIO)
  // io_uring_submit / io_uring_queue_init, whatever the file
  int submit_refusals = 0;  // the first n calls take nothing: 0, -EAGAIN, -EINTR, -EBUSY in turn
  int submit_errno = 0;     // after submit_ok calls went through, every call fails with it
  int submit_ok = 0;
  int init_errno = 0;  // io_uring_queue_init fails with it (EPERM: io_uring blocked by seccomp)
};

struct FaultCounts {
  std::atomic<uint64_t> pread_calls{0}, pread_faults{0};
  std::atomic<uint64_t> cqes{0}, cqe_faults{0};
  std::atomic<uint64_t> submits{0}, submit_faults{0};
  std::atomic<uint64_t> inits{0}, init_faults{0};
};

// Arms `plan` for the scope (one at a time) with zeroed counts; disarmed on destruction.
class Faults {
 public:
  explicit Faults(FaultPlan plan);
  ~Faults();
  Faults(const Faults&) = delete;
  Faults& operator=(const Faults&) = delete;
  const FaultCounts& counts() const;
};

}  // namespace stoker::test
