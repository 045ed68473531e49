// SPDX-License-Identifier: Apache-2.0
// The interposed calls behind io_faults.h. The loader is a static library linked into the
// test executable, so its calls to pread, io_uring_submit and io_uring_queue_init bind to
// the definitions below, which pass through to libc's and liburing's (dlsym RTLD_NEXT) and
// apply the armed plan. Inert when nothing is armed.
#include "io_faults.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "loader/sources/source.h"
#include "loader/sources/source_uring_testing.h"

#if STOKER_HAVE_URING
#include <liburing.h>
#endif

namespace stoker::test {
namespace {

std::mutex mu;
FaultPlan plan;
bool armed = false;
FaultCounts tally;
std::set<std::pair<std::string, uint64_t>> retried;  // (file, offset) already failed once

template <class F>
F real(const char* name) {
  static_assert(sizeof(F) == sizeof(void*));
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) std::abort();
  F f;
  std::memcpy(&f, &p, sizeof f);
  return f;
}

bool hits(std::string_view file) {
  return plan.path_has.empty() || file.find(plan.path_has) != std::string_view::npos;
}

std::string fd_path(int fd) {
  char link[64], out[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, out, sizeof out);
  return n > 0 ? std::string(out, static_cast<size_t>(n)) : std::string();
}

// Once per (file, offset): true the first time (fail it), false when it is asked again.
bool first_time(const std::string& file, uint64_t offset) {
  auto [it, inserted] = retried.emplace(file, offset);
  if (!inserted) retried.erase(it);
  return inserted;
}

int on_completion(std::string_view file, uint64_t offset, bool, int res) {
  std::lock_guard lock(mu);
  ++tally.cqes;
  if (!armed || !hits(file)) return res;
  int out = res;
  if (plan.cqe_errno != 0) {
    out = -plan.cqe_errno;
  } else if (plan.cqe_retry != 0 && res >= 0 && first_time(std::string(file), offset)) {
    out = -plan.cqe_retry;
  } else if (res > 0) {
    if (offset >= plan.cqe_eof_at) {
      out = 0;
    } else if (offset + static_cast<uint64_t>(res) > plan.cqe_eof_at) {
      out = static_cast<int>(plan.cqe_eof_at - offset);
    }
    if (plan.cqe_max > 0 && out > plan.cqe_max) out = plan.cqe_max;
  }
  if (out != res) ++tally.cqe_faults;
  return out;
}

}  // namespace

Faults::Faults(FaultPlan p) {
  std::lock_guard lock(mu);
  plan = std::move(p);
  armed = true;
  retried.clear();
  for (auto* c : {&tally.pread_calls, &tally.pread_faults, &tally.cqes, &tally.cqe_faults,
                  &tally.submits, &tally.submit_faults, &tally.inits, &tally.init_faults}) {
    *c = 0;
  }
  set_uring_completion_hook(on_completion);
}

Faults::~Faults() {
  set_uring_completion_hook(nullptr);
  std::lock_guard lock(mu);
  armed = false;
  plan = {};
}

const FaultCounts& Faults::counts() const {
  return tally;
}

}  // namespace stoker::test

using stoker::test::mu;
using stoker::test::plan;
using stoker::test::tally;

extern "C" ssize_t pread(int fd, void* buf, size_t n, off_t offset) {
  using Fn = ssize_t (*)(int, void*, size_t, off_t);
  static const Fn next = stoker::test::real<Fn>("pread");
  {
    std::lock_guard lock(mu);
    ++tally.pread_calls;
    if (stoker::test::armed && fd >= 0) {
      const std::string file = stoker::test::fd_path(fd);
      if (stoker::test::hits(file)) {
        if (plan.pread_errno != 0) {
          ++tally.pread_faults;
          errno = plan.pread_errno;
          return -1;
        }
        if (plan.pread_eintr && stoker::test::first_time(file, static_cast<uint64_t>(offset))) {
          ++tally.pread_faults;
          errno = EINTR;
          return -1;
        }
        if (plan.pread_max > 0 && n > plan.pread_max) {
          ++tally.pread_faults;
          n = plan.pread_max;
        }
      }
    }
  }
  return next(fd, buf, n, offset);
}

#if STOKER_HAVE_URING
extern "C" int io_uring_submit(struct io_uring* ring) {
  using Fn = int (*)(struct io_uring*);
  static const Fn next = stoker::test::real<Fn>("io_uring_submit");
  {
    std::lock_guard lock(mu);
    const uint64_t call = tally.submits++;
    if (stoker::test::armed) {
      if (call < static_cast<uint64_t>(plan.submit_refusals)) {
        ++tally.submit_faults;
        static constexpr int kRefusals[] = {0, -EAGAIN, -EINTR, -EBUSY};
        return kRefusals[call % 4];
      }
      if (plan.submit_errno != 0 &&
          call >= static_cast<uint64_t>(plan.submit_refusals + plan.submit_ok)) {
        ++tally.submit_faults;
        return -plan.submit_errno;
      }
    }
  }
  return next(ring);
}

extern "C" int io_uring_queue_init(unsigned entries, struct io_uring* ring, unsigned flags) {
  using Fn = int (*)(unsigned, struct io_uring*, unsigned);
  static const Fn next = stoker::test::real<Fn>("io_uring_queue_init");
  {
    std::lock_guard lock(mu);
    ++tally.inits;
    if (stoker::test::armed && plan.init_errno != 0) {
      ++tally.init_faults;
      return -plan.init_errno;
    }
  }
  return next(entries, ring, flags);
}
#endif
