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
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/interrupt.h"
#include "train/parallel/collectives.h"
#include "train/parallel/peer_liveness.h"

namespace stoker {
namespace {

// How long a wait goes on after an interrupt. A peer on this machine is looked at
// (peer_liveness.h): one that has ended stops the wait at once, live ones are waited for up to
// kLiveWait (a live rank that does not come in that time is stuck, not slow). A peer that
// cannot be looked at (another machine) gets a grace: at least kInterruptGrace, and
// kGraceFactor times the longest wait seen so far (a peer still finishing its step under load
// takes about that long), at most kMaxGrace.
constexpr std::chrono::seconds kLiveWait{60};
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
  explicit MpiCollective(std::string label) : label_(std::move(label)) {
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
    // Who every rank is, for the waits after an interrupt (check_peers); before the thread.
    const ProcessId self = this_process();
    peers_.resize(size_t(world_));
    check_mpi(MPI_Allgather(&self, int(sizeof(self)), MPI_BYTE, peers_.data(), int(sizeof(self)),
                            MPI_BYTE, MPI_COMM_WORLD),
              "MPI_Allgather of the ranks' process ids");
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
  //
  // Returns only once the ticket's collective has finished: never while the communication
  // thread may still read or write the caller's memory. Issue 36: this wait used to throw
  // Interrupted when its grace ran out while the collective was still in MPI; the caller
  // unwound and freed the gradient arena (and agree_stop's vote on the stack) under it, and a
  // peer that was only slow then delivered its data there (a segfault in
  // opal_convertor_unpack, and the checkpoint lost). A wait that gives up now ends the job
  // from here (give_up), with nothing unwound.
  void wait(uint64_t ticket, bool learn) {
    std::unique_lock lock(mutex_);
    STOKER_CHECK(ticket >= 1 && ticket < next_ticket_);
    // Polled, not a plain wait: a rank whose peer died is stopped by mpirun's SIGTERM while it
    // waits here, and must say so and leave (common/interrupt.h). The same signal sent to every
    // rank (Ctrl-C, a scheduler's SIGTERM) finds the peers alive: the collective still
    // finishes, and a live peer is waited for however slow it is (peer_liveness.h).
    const auto began = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point since{};  // the first poll after the interrupt
    while (finished_ < ticket && !error_) {
      done_.wait_for(lock, std::chrono::milliseconds(20));
      if (!interrupted() || finished_ >= ticket || error_) continue;
      const auto now = std::chrono::steady_clock::now();
      if (since == std::chrono::steady_clock::time_point{}) since = now;
      check_peers(ticket, now - since);
    }
    if (error_) std::rethrow_exception(error_);
    if (learn && since == std::chrono::steady_clock::time_point{})
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

  std::string ended_peer() const override {
    bool unknown = false;
    return look_at_peers(unknown);
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

  // After an interrupt, while `ticket` is unfinished and has been waited for `waited` since:
  // ends the job (give_up) when a peer has ended, or when the wait has gone on longer than a
  // peer that is alive (or cannot be looked at) could need; else returns.
  void check_peers(uint64_t ticket, std::chrono::steady_clock::duration waited) {
    bool unknown = false;
    const std::string ended = look_at_peers(unknown);
    if (!ended.empty()) give_up(ticket, ended + ", so this step cannot finish and is not saved");
    if (!unknown) {
      if (waited >= kLiveWait)
        give_up(ticket, fmt::format("{} alive but did not come in {} s; stuck?",
                                    world_ == 2 ? "it is" : "they are", kLiveWait.count()));
      return;
    }
    const auto grace = std::clamp(
        std::chrono::duration_cast<std::chrono::milliseconds>(kGraceFactor * slowest_wait_),
        kInterruptGrace, kMaxGrace);
    if (waited >= grace)
      give_up(ticket, fmt::format("none came in {} ms; did one end? (a rank on another machine "
                                  "cannot be looked at)",
                                  grace.count()));
  }

  // The first peer that has ended, as a phrase, or empty; `unknown`: some peer cannot be
  // looked at (peer_liveness.h).
  std::string look_at_peers(bool& unknown) const {
    const ProcessId& self = peers_[size_t(rank_)];
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const Liveness l = liveness(peers_[size_t(r)], self);
      if (l == Liveness::ended)
        return fmt::format("rank {} (pid {}) has ended", r, peers_[size_t(r)].pid);
      unknown = unknown || l == Liveness::unknown;
    }
    return {};
  }

  // A wait that cannot finish ends the job here, without unwinding: the collective still holds
  // the caller's memory (see wait()).
  [[noreturn]] void give_up(uint64_t ticket, const std::string& why) {
    const std::string line = fmt::format(
        "{}: rank {} of {}: stopped: signal {} while waiting for the other {} (collective #{}): "
        "{}\n",
        label_, rank_, world_, interrupt_signal(),
        world_ == 2 ? std::string("rank") : fmt::format("{} ranks", world_ - 1), ticket, why);
    std::fputs(line.c_str(), stderr);
    abort(interrupt_exit_code());
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

  const std::string label_;  // what a line this collective prints starts with ("stoker train")
  int rank_ = 0, world_ = 1;
  std::string library_;
  std::vector<ProcessId> peers_;  // every rank's process, by rank

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

std::unique_ptr<Collective> make_mpi_collective(const std::string& label) {
  return std::make_unique<MpiCollective>(label);
}

}  // namespace stoker
