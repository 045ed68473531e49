// SPDX-License-Identifier: Apache-2.0
// processes:N: N stoker-worker processes decode and augment straight into batch tensors in
// shared memory. This process keeps `prefetch` batches in flight, gives each worker a couple
// of sample attempts at a time over its socket, and applies the on-error policy to the
// replies as load_sample does, so batches are bit-identical to serial's. One service thread
// does all socket work and starts every worker (PDEATHSIG follows the starting thread). A
// worker that dies or stalls is replaced; the sample it was on is retried once, and a second
// crash makes that sample a bad one, reported under --on-error like any other.
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/system_info.h"
#include "loader/process_pool/process_pool_memory.h"
#include "loader/process_pool/process_pool_spawn.h"
#include "loader/process_pool/worker_protocol.h"
#include "loader/readers/prefetcher.h"
#include "loader/readers/reader.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {

namespace {

// Requests outstanding per worker. More than two: on a machine with as many workers as
// cores the parent's service thread is often not running when a worker finishes, and a
// worker with nothing queued then idles (processes:2 reached 0.78 of threads:2 at 256px
// with 2; docs/PERFORMANCE.md). A crash re-sends the queued ones, which costs nothing.
constexpr size_t kPerWorker = 8;
constexpr int kReapMs = 5'000;

// A worker not ready this long after its start is killed, and the reader fails naming it.
// STOKER_WORKER_STARTUP_TIMEOUT_S shortens it for the tests.
int startup_timeout_ms() {
  const char* env = std::getenv("STOKER_WORKER_STARTUP_TIMEOUT_S");
  const long s = env ? std::atol(env) : 0;
  return static_cast<int>(s > 0 ? s * 1000 : 30'000);
}

// A worker silent on one sample this long is killed and counts as crashed on it.
// STOKER_WORKER_SAMPLE_TIMEOUT_S shortens it for the time-out test.
int64_t sample_timeout_ns() {
  const char* env = std::getenv("STOKER_WORKER_SAMPLE_TIMEOUT_S");
  const long s = env ? std::atol(env) : 0;
  return (s > 0 ? s : 120) * 1'000'000'000LL;
}

// One slot of a batch in flight: the policy's chain, kept between replies.
struct Slot {
  SlotChain chain;
  int crashes = 0;  // workers that died while on the current candidate
};

struct Proc {
  WorkerProcess p;
  std::deque<size_t> sent;  // slot ids, in the order the worker answers them
  int64_t head_since = 0;   // when the worker started on sent.front()
};

class ProcessesReader final : public Reader {
 public:
  ProcessesReader(LoaderContext& ctx, int processes)
      : ctx_(ctx),
        processes_(static_cast<size_t>(processes)),
        exe_(find_worker_binary()),
        timeout_ns_(sample_timeout_ns()),
        capacity_(ctx.config.sampler.batch_size),
        sample_bytes_(ctx.normalizer.spec.sample_bytes()),
        stride_((capacity_ * sample_bytes_ + 4095) / 4096 * 4096),
        index_mem_("stoker-index", shared_index_bytes(ctx.index)),
        tensors_("stoker-batches", pool_batches(ctx.config) * stride_),
        pinned_(ctx.config.memory, tensors_.data(), tensors_.size()),
        batches_(pool_batches(ctx.config)),
        slots_(batches_.size() * capacity_),
        wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
        prefetch_(ctx, batches_, [this](size_t i) { start_batch(i); }) {
    if (wake_fd_ < 0) fail("processes:N: cannot create an eventfd: {}", errno_text(errno));
    write_shared_index(ctx.index, index_mem_.data());
    index_mem_.seal();
    setup_.transform = ctx.config.transform;
    setup_.output = ctx.normalizer.spec;
    setup_.decode = ctx.config.decode;
    setup_.seed = ctx.config.sampler.seed;
    setup_.no_decode = ctx.config.no_decode;
    setup_.source = to_wire(ctx.config.source);
    for (size_t i = 0; i < batches_.size(); ++i) {
      Batch& b = batches_[i];
      b.spec = ctx.normalizer.spec;
      b.capacity = capacity_;
      b.data = static_cast<char*>(tensors_.data()) + i * stride_;
      b.labels.assign(capacity_, 0);
      b.indices.assign(capacity_, 0);
      b.sample_hash.assign(capacity_, 0);
      b.timing.assign(capacity_, {});
    }
    thread_ = std::thread([this] { serve(); });
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_; });
    if (fatal_) {
      lock.unlock();
      thread_.join();
      close(wake_fd_);
      std::rethrow_exception(fatal_);
    }
  }

  ~ProcessesReader() override {
    stop();
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    wake();
    thread_.join();
    close(wake_fd_);
  }

  void begin(size_t first) override {
    {
      std::lock_guard lock(mu_);
      active_ = true;
    }
    prefetch_.begin(first);
  }

  Batch& wait(size_t b) override {
    return prefetch_.wait(b, [&](size_t i) {
      return std::to_string(prefetch_.remaining(i)) + " of " + std::to_string(batches_[i].size) +
             " samples to go, " + std::to_string(processes_) + " worker processes";
    });
  }

  void stop() override {
    // Bounded: a worker silent for the sample time-out is killed, which ends its requests.
    prefetch_.stop([&] {
      std::lock_guard lock(mu_);
      active_ = false;
      for (size_t id : ready_) prefetch_.sample_done(id / capacity_);
      ready_.clear();
      wake();
    });
  }

  void retain() override { prefetch_.retain(); }
  void release(const Batch& batch) override { prefetch_.release(batch); }
  double worker_cpu_seconds() const override {
    std::lock_guard lock(pids_mu_);
    double s = 0;
    for (pid_t pid : pids_) s += pid_cpu_seconds(pid);
    return s;
  }

  size_t pool_bytes() const override { return tensors_.size(); }

 private:
  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
  }

  // A batch buffer to fill (the prefetcher set its number and size): every slot starts its
  // chain at candidate 0.
  void start_batch(size_t i) {
    std::lock_guard lock(mu_);
    for (size_t s = 0; s < batches_[i].size; ++s) {
      Slot& slot = slots_[i * capacity_ + s];
      slot.chain.begin(ctx_, batches_[i].number, s);
      slot.crashes = 0;
      ready_.push_back(i * capacity_ + s);
    }
    wake();
  }

  // With mu_ held, as everything below that touches the slots or ready_.
  // The candidate failed with `reason` (naming the file): the policy decides.
  void candidate_failed(size_t id, const std::string& reason) {
    Slot& s = slots_[id];
    try {
      s.chain.failed(ctx_, reason);
    } catch (...) {
      return finish_slot(id, std::current_exception());
    }
    s.crashes = 0;
    ready_.push_front(id);  // urgent: its batch waits for it
  }

  void finish_slot(size_t id, std::exception_ptr error) {
    prefetch_.sample_done(id / capacity_, error);
  }

  // Fill every worker to depth 1, then to depth 2: idle workers first.
  void dispatch() {
    for (size_t depth = 1; depth <= kPerWorker; ++depth) {
      for (Proc& p : procs_) {
        if (ready_.empty()) return;
        if (p.sent.size() >= depth) continue;
        const size_t id = ready_.front();
        ready_.pop_front();
        const Slot& s = slots_[id];
        SampleRequest r;
        r.tag = id;
        r.epoch = ctx_.sampler.epoch();
        const Batch& b = batches_[id / capacity_];
        r.offset = id / capacity_ * stride_ + id % capacity_ * b.spec.sample_bytes();
        r.width = b.spec.width;
        r.height = b.spec.height;
        r.index = s.chain.index();
        r.attempt = s.chain.attempt();
        if (p.sent.empty()) p.head_since = now_ns();
        p.sent.push_back(id);
        ++outstanding_;
        send_packet(p.p.socket, &r, sizeof r);  // a dead worker shows as end of stream
      }
    }
  }

  void on_reply(Proc& p, const SampleReply& r) {
    STOKER_CHECK(!p.sent.empty() && p.sent.front() == r.tag);
    p.sent.pop_front();
    p.head_since = now_ns();
    --outstanding_;
    const size_t id = r.tag;
    if (!active_) return finish_slot(id, nullptr);  // abandoned by stop()
    Slot& s = slots_[id];
    SampleTiming& t = s.chain.timing();
    t.read_ns += r.timing.read_ns;
    t.decode_ns += r.timing.decode_ns;
    t.augment_ns += r.timing.augment_ns;
    t.collate_ns += r.timing.collate_ns;
    t.bytes += r.timing.bytes;
    t.start_ns = r.timing.start_ns;
    t.thread = r.timing.thread;
    std::string reason(r.reason, r.reason_size);
    if (r.status == SampleStatus::bad_input) return candidate_failed(id, reason);
    if (r.status == SampleStatus::internal) {
      return finish_slot(id, std::make_exception_ptr(Error(reason)));
    }
    s.chain.filled(ctx_, batches_[id / capacity_], id % capacity_, r.hash);
    finish_slot(id, nullptr);
  }

  // A worker answers in order, so it died on its first outstanding request; the ones queued
  // behind it never started and go back as they were.
  void on_worker_lost(Proc& p, pid_t pid, const std::string& why) {
    for (size_t j = 0; j < p.sent.size(); ++j) {
      --outstanding_;
      const size_t id = p.sent[j];
      if (!active_) {
        finish_slot(id, nullptr);
        continue;
      }
      Slot& s = slots_[id];
      const std::string path = ctx_.index.path(s.chain.index());
      if (j == 0 && ++s.crashes == 2) {
        candidate_failed(id,
                         path + ": worker process crashed twice while decoding it (" + why + ")");
        continue;
      }
      if (j == 0 && ctx_.config.warn) {
        log_warning(fmt::format("worker process {} ended ({}) while decoding {}; retrying it once",
                                pid, why, path));
      }
      ready_.push_front(id);
    }
    p.sent.clear();
  }

  // Without mu_: only this thread touches procs_.
  // Started all at once, then awaited; on failure the rest are ended with the pool.
  void start_workers(size_t count) {
    const size_t first = procs_.size();
    for (size_t i = 0; i < count; ++i) {
      procs_.push_back({spawn_worker(exe_, index_mem_.fd(), tensors_.fd(), setup_), {}, 0});
    }
    for (size_t i = first; i < procs_.size(); ++i) {
      await_ready(procs_[i].p, exe_, startup_timeout_ms());
    }
    publish_pids();
  }

  // The workers' pids as worker_cpu_seconds() reads them from another thread.
  void publish_pids() {
    std::lock_guard lock(pids_mu_);
    pids_.clear();
    for (const Proc& p : procs_) pids_.push_back(p.p.pid);
  }

  // Reads every pending reply; false at end of stream (the worker has gone).
  bool drain(Proc& p) {
    SampleReply r;
    while (true) {
      const ssize_t n = recv_packet(p.p.socket, &r, sizeof r, false);
      if (n < 0) return true;
      if (n == 0) return false;
      STOKER_CHECK(static_cast<size_t>(n) >= offsetof(SampleReply, reason));
      r.reason_size = static_cast<uint32_t>(n - offsetof(SampleReply, reason));
      on_reply(p, r);
    }
  }

  void serve() {
    std::unique_lock lock(mu_, std::defer_lock);
    try {
      start_workers(processes_);
      lock.lock();
      started_ = true;
      cv_.notify_all();
      serve_loop(lock);
    } catch (...) {
      if (!lock.owns_lock()) lock.lock();
      fatal_ = std::current_exception();
      prefetch_.fail(fatal_);
    }
    for (Proc& p : procs_) close(std::exchange(p.p.socket, -1));  // all exit at once
    for (Proc& p : procs_) end_worker(p.p, kReapMs);
    procs_.clear();
    publish_pids();
    outstanding_ = 0;
    started_ = true;
    cv_.notify_all();
  }

  void serve_loop(std::unique_lock<std::mutex>& lock) {
    std::vector<pollfd> fds;
    while (!quit_) {
      if (active_) dispatch();
      if (outstanding_ == 0) cv_.notify_all();
      fds.assign(1, {wake_fd_, POLLIN, 0});
      for (const Proc& p : procs_) fds.push_back({p.p.socket, POLLIN, 0});
      lock.unlock();
      poll(fds.data(), fds.size(), 1000);
      uint64_t counter;
      [[maybe_unused]] const ssize_t n = read(wake_fd_, &counter, sizeof counter);
      lock.lock();
      const int64_t now = now_ns();
      for (size_t i = procs_.size(); i-- > 0;) {
        Proc& p = procs_[i];
        const pid_t pid = p.p.pid;
        std::string why;
        if (fds[i + 1].revents && !drain(p)) {
          why = describe_exit(end_worker(p.p, kReapMs));
        } else if (!p.sent.empty() && now - p.head_since > timeout_ns_) {
          kill(p.p.pid, SIGKILL);
          end_worker(p.p, kReapMs);
          why = fmt::format("no answer in {} s, killed", timeout_ns_ / 1'000'000'000);
        } else {
          continue;
        }
        on_worker_lost(p, pid, why);
        procs_.erase(procs_.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if (procs_.size() < processes_ && !quit_) {
        lock.unlock();
        start_workers(processes_ - procs_.size());
        lock.lock();
      }
    }
  }

  LoaderContext& ctx_;
  const size_t processes_;
  const std::string exe_;
  const int64_t timeout_ns_;
  const size_t capacity_, sample_bytes_, stride_;  // stride_: bytes between batch tensors
  WorkerSetup setup_;
  SharedMemory index_mem_;  // sealed; the workers' read-only copy of the index
  SharedMemory tensors_;    // [pool_batches] batches of [capacity] samples, stride_ apart
  PinnedRegion pinned_;     // tensors_ pinned for a device while mapped (config.memory)
  std::vector<Batch> batches_;
  std::vector<Slot> slots_;  // [pool_batches][capacity]; a slot's id is batch * capacity + slot
  std::vector<Proc> procs_;  // the service thread's alone
  std::thread thread_;
  const int wake_fd_;  // eventfd: wakes the service thread from poll

  std::mutex mu_;
  mutable std::mutex pids_mu_;  // guards pids_ alone (worker_cpu_seconds, any thread)
  std::vector<pid_t> pids_;
  std::condition_variable cv_;
  std::deque<size_t> ready_;  // slot ids waiting for a worker
  size_t outstanding_ = 0;    // requests sent and not yet answered or lost
  bool active_ = false;       // between begin() and stop(): the sampler may be read
  bool started_ = false;
  bool quit_ = false;
  std::exception_ptr fatal_;  // the service thread could not go on
  Prefetcher prefetch_;
};

}  // namespace

std::unique_ptr<Reader> make_processes_reader(LoaderContext& ctx, int processes) {
  return std::make_unique<ProcessesReader>(ctx, processes);
}

}  // namespace stoker
