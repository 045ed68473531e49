// SPDX-License-Identifier: Apache-2.0
// The Collective over MPI_COMM_WORLD (Open MPI), for processes on CPUs. One communication
// thread makes every MPI call, in the order the caller asked for them, so an all-reduce
// progresses while the caller's threads run the backward, and every rank issues the same
// collectives in the same order. Host memory only; not CUDA-aware MPI.
//
// Bit-identical sums: allreduce_sum is MPI_Reduce_scatter (each element summed on exactly one
// rank, its block's owner) then MPI_Allgatherv (the owner's bits copied to every rank). Which
// algorithm Open MPI picks for either step changes speed, never the bits a rank ends up with;
// the traffic is the ring all-reduce's 2(N-1)/N x bytes.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/interrupt.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

// How long a wait goes on after an interrupt before it concludes a peer is gone: at least
// kInterruptGrace, and kGraceFactor times the longest wait seen so far (a peer still finishing
// its step under load takes about that long), at most kMaxGrace.
constexpr std::chrono::milliseconds kInterruptGrace{500};
constexpr std::chrono::milliseconds kMaxGrace{5000};
constexpr int kGraceFactor = 3;

// MPI counts are ints: larger buffers go in pieces of this many elements.
constexpr size_t kMaxCount = size_t(1) << 30;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("MPI: {} failed: {}", what, std::string(text, size_t(len)));
}

class MpiCollective final : public Collective {
 public:
  MpiCollective() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) fail("MPI is already initialised in this process: one MPI collective only");
    // MULTIPLE because abort() may be called while the communication thread sits in a
    // collective; every other call comes from that one thread.
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      fail("MPI_Init_thread failed (is this process started by mpirun?)");
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      fail("this MPI library offers thread level {}, Stoker needs MPI_THREAD_SERIALIZED ({})",
           provided, int(MPI_THREAD_SERIALIZED));
    }
    // Errors come back as codes and become stoker::Error on the caller's thread.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    library_ = std::string(version, size_t(len));
    library_ = library_.substr(0, library_.find_first_of(",\n"));  // "Open MPI v4.1.4"
    thread_ = std::thread([this] { serve(); });
  }

  ~MpiCollective() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    queued_.notify_all();
    thread_.join();
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string describe() const override {
    return fmt::format("mpi ({}), {} rank{}", library_, world_, world_ == 1 ? "" : "s");
  }

  void allreduce_sum(float* data, size_t n, CollectiveMemory where) override {
    wait(start_allreduce_sum(data, n, where));
  }

  uint64_t start_allreduce_sum(float* data, size_t n, CollectiveMemory where) override {
    host_only(where, "all-reduce");
    return enqueue([this, data, n] { sum(data, n); });
  }

  void wait(uint64_t ticket) override { wait(ticket, true); }

  // `learn`: whether this wait's length may raise the interrupt grace. Not for broadcasts and
  // barriers, which also wait for a peer's start-up (seconds), unlike the steps' all-reduces.
  void wait(uint64_t ticket, bool learn) {
    std::unique_lock lock(mutex_);
    STOKER_CHECK(ticket >= 1 && ticket < next_ticket_);
    // Polled, not a plain wait: a rank whose peer died is stopped by mpirun's SIGTERM while
    // it waits here, and must be able to say so and leave (common/interrupt.h). The same
    // signal sent to every rank (Ctrl-C, a scheduler's SIGTERM) finds the peers alive: the
    // collective still finishes, so it gets kInterruptGrace first (mpirun's SIGKILL follows
    // its SIGTERM after odls_base_sigkill_timeout, 1 s by default: scripts/mpirun_local.sh
    // raises it, docs/CLI.md says why).
    std::chrono::steady_clock::time_point give_up{};
    const auto began = std::chrono::steady_clock::now();
    bool was_interrupted = false;
    while (finished_ < ticket && !error_) {
      done_.wait_for(lock, std::chrono::milliseconds(20));
      if (!interrupted() || finished_ >= ticket || error_) continue;
      was_interrupted = true;
      const auto now = std::chrono::steady_clock::now();
      if (give_up == std::chrono::steady_clock::time_point{})
        give_up = now + std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       kGraceFactor * slowest_wait_),
                                   kInterruptGrace, kMaxGrace);
      if (now >= give_up)
        throw Interrupted(fmt::format(
            "signal {} while waiting for the other {} (collective #{}); did one end?",
            interrupt_signal(),
            world_ == 2 ? std::string("rank") : fmt::format("{} ranks", world_ - 1), ticket));
    }
    if (error_) std::rethrow_exception(error_);
    if (learn && !was_interrupted)
      slowest_wait_ = std::max(slowest_wait_, std::chrono::steady_clock::now() - began);
  }

  void broadcast(void* data, size_t bytes, int root, CollectiveMemory where) override {
    host_only(where, "broadcast");
    STOKER_CHECK(root >= 0 && root < world_);
    wait(enqueue([data, bytes, root] {
           auto* p = static_cast<char*>(data);
           for (size_t done = 0; done < bytes; done += kMaxCount) {
             int count = int(std::min(kMaxCount, bytes - done));
             check_mpi(MPI_Bcast(p + done, count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
           }
         }),
         false);
  }

  void barrier() override {
    wait(enqueue([] { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }), false);
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    // MPI_Abort waits for mpirun to end this process too; its SIGTERM must do that at once,
    // not set the interrupt flag and leave it to the SIGKILL odls_base_sigkill_timeout later.
    std::signal(SIGTERM, SIG_DFL);
    std::signal(SIGINT, SIG_DFL);
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);  // MPI_Abort does not return; should it, this rank still ends
  }

 private:
  void host_only(CollectiveMemory where, const char* what) const {
    if (where.device)
      fail("the MPI collective's {} takes host memory, not device memory (use NCCL on GPUs)", what);
  }

  uint64_t enqueue(std::function<void()> work) {
    uint64_t ticket;
    {
      std::lock_guard lock(mutex_);
      if (error_) std::rethrow_exception(error_);
      ticket = next_ticket_++;
      queue_.push_back(std::move(work));
    }
    queued_.notify_one();
    return ticket;
  }

  // The communication thread: runs the queue in ticket order. After a failure the collective
  // is broken (ranks no longer agree on what comes next): every later wait rethrows it.
  void serve() {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock lock(mutex_);
        queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr error;
      try {
        if (!error_) work();
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        ++finished_;
        if (error && !error_) error_ = error;
      }
      done_.notify_all();
    }
  }

  // Reduce-scatter then all-gather (see the top of the file), piece by piece.
  void sum(float* data, size_t n) {
    for (size_t off = 0; off < n; off += kMaxCount) {
      size_t piece = std::min(kMaxCount, n - off);
      counts_.assign(size_t(world_), 0);
      displs_.assign(size_t(world_), 0);
      for (int r = 0; r < world_; ++r) {
        size_t begin = piece * size_t(r) / size_t(world_);
        size_t end = piece * size_t(r + 1) / size_t(world_);
        counts_[size_t(r)] = int(end - begin);
        displs_[size_t(r)] = int(begin);
      }
      int mine = counts_[size_t(rank_)];
      if (scratch_.size() < size_t(mine)) scratch_.resize(size_t(mine));
      check_mpi(MPI_Reduce_scatter(data + off, scratch_.data(), counts_.data(), MPI_FLOAT, MPI_SUM,
                                   MPI_COMM_WORLD),
                "MPI_Reduce_scatter");
      check_mpi(MPI_Allgatherv(scratch_.data(), mine, MPI_FLOAT, data + off, counts_.data(),
                               displs_.data(), MPI_FLOAT, MPI_COMM_WORLD),
                "MPI_Allgatherv");
    }
  }

  int rank_ = 0, world_ = 1;
  std::string library_;

  std::mutex mutex_;
  std::condition_variable queued_, done_;
  std::deque<std::function<void()>> queue_;
  uint64_t next_ticket_ = 1;  // the ticket the next enqueue returns
  uint64_t finished_ = 0;     // tickets 1..finished_ are done
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;
  std::chrono::steady_clock::duration slowest_wait_{};  // of the uninterrupted waits so far

  // The communication thread's own buffers.
  std::vector<int> counts_, displs_;
  std::vector<float> scratch_;
};

}  // namespace

bool mpi_built() {
  return true;
}

std::unique_ptr<Collective> make_mpi_collective() {
  return std::make_unique<MpiCollective>();
}

}  // namespace stoker
