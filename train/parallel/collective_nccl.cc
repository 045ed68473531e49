// SPDX-License-Identifier: Apache-2.0
// The Collective over NCCL (train/parallel/collective_nccl.h). allreduce_sum enqueues
// ncclAllReduce(float, sum) on the given stream and returns; start_allreduce_sum does the same
// and records an event, which wait() synchronises the host with. check_async() polls NCCL's
// asynchronous error (the GPU backend calls it while it waits on its streams) and aborts the
// communicator on one, so that no destructor then blocks on kernels waiting for a dead peer;
// after a signal it also asks the host collective whether a peer has ended (ended_peer), and
// stops the same way, since NCCL may never report a peer gone over shared memory. Every rank
// gets
// bit-identical sums: NCCL reduces each element along one ring or tree order shared by all
// ranks and sends the result back out. Host memory is refused (the host collective takes it).
#include "train/parallel/collective_nccl.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <utility>

#include "common/cuda/handle.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/device.h"

namespace stoker {
namespace {

class NcclCollective final : public Collective {
 public:
  NcclCollective(Collective& host, int device) : host_(host), device_(device) {
    const std::string why = gpu::device_unavailable_reason(device);
    if (!why.empty())
      fail("NCCL: rank {} of {} cannot use CUDA device {}: {}", host.rank(), host.world(), device,
           why);
    STOKER_GPU(cudaSetDevice(device));
    ncclUniqueId id{};
    if (host.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    host.broadcast(&id, sizeof(id), 0);
    check(ncclCommInitRank(&comm_, host.world(), id, host.rank()), "ncclCommInitRank");
    int version = 0;
    ncclGetVersion(&version);
    version_ = fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  }

  // ncclCommDestroy waits for the communicator's pending work, which never ends when a peer
  // failed: a communicator in error (or ours already aborted) is aborted, as torch's c10d does.
  ~NcclCollective() override {
    pending_.clear();  // the events, before the communicator
    if (!comm_) return;
    if (async_error() == ncclSuccess)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
  }

  int rank() const override { return host_.rank(); }
  int world() const override { return host_.world(); }
  std::string describe() const override {
    return fmt::format("nccl {} on device {}, {} rank{}", version_, device_, world(),
                       world() == 1 ? "" : "s");
  }

  void allreduce_sum(float* data, size_t n, CollectiveMemory where) override {
    check(ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm_, stream_of(where, "all-reduce")),
          "ncclAllReduce");
  }

  uint64_t start_allreduce_sum(float* data, size_t n, CollectiveMemory where) override {
    allreduce_sum(data, n, where);
    gpu::EventHandle event;
    STOKER_GPU(cudaEventCreateWithFlags(event.out(), cudaEventDisableTiming));
    const cudaEvent_t recorded = event;
    pending_.emplace_back(next_ticket_, std::move(event));
    STOKER_GPU(cudaEventRecord(recorded, stream_of(where, "all-reduce")));
    return next_ticket_++;
  }

  // Tickets finish in order: waiting for one waits for (and forgets) every earlier one.
  void wait(uint64_t ticket) override {
    STOKER_CHECK(ticket >= 1 && ticket < next_ticket_);
    while (!pending_.empty() && pending_.front().first <= ticket) {
      const gpu::EventHandle event = std::move(pending_.front().second);
      pending_.pop_front();
      STOKER_GPU(cudaEventSynchronize(event));
    }
    check_async();
  }

  void check_async() override {
    const ncclResult_t st = async_error();
    if (st != ncclSuccess && st != ncclInProgress) {
      const std::string why = error_text(st);
      abort_communicator();
      fail("NCCL: an operation failed asynchronously on rank {} of {} (device {}): {}", rank(),
           world(), device_, why);
    }
    stop_if_peer_ended();
  }

  void abort_communicator() override {
    if (comm_) ncclCommAbort(std::exchange(comm_, nullptr));
  }

  void broadcast(void* data, size_t bytes, int root, CollectiveMemory where) override {
    STOKER_CHECK(root >= 0 && root < world());
    check(ncclBroadcast(data, data, bytes, ncclChar, root, comm_, stream_of(where, "broadcast")),
          "ncclBroadcast");
  }

  void barrier() override { host_.barrier(); }

  // The communicator first (NCCL kernels waiting for a dead peer end), then the job.
  [[noreturn]] void abort(int code) override {
    if (comm_) ncclCommAbort(std::exchange(comm_, nullptr));
    host_.abort(code);
    _exit(code);  // not reached: the host collective's abort ends the process
  }

 private:
  // After a signal, a device wait must not outlast a peer that has ended (mpirun's SIGTERM
  // while this rank waits on kernels that wait for it): NCCL's kernels would spin until
  // STOKER_NCCL_TIMEOUT_S, long after mpirun's SIGKILL. A live peer is waited for: with every
  // rank signalled (a preemption) the all-reduce finishes and the ranks agree to stop on the
  // host collective after the step. The communicator is aborted first, so that its kernels
  // end and the streams that hold them can be synchronised (as for an asynchronous error).
  // check_async is polled every 200 us: the host collective is asked every 20 ms at most.
  void stop_if_peer_ended() {
    if (!interrupted()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_look_) return;
    next_look_ = now + std::chrono::milliseconds(20);
    const std::string ended = host_.ended_peer();
    if (ended.empty()) return;
    abort_communicator();
    throw Interrupted(fmt::format(
        "signal {} while device {} waited for the other ranks' NCCL work: {}, so this step "
        "cannot finish and is not saved",
        interrupt_signal(), device_, ended));
  }

  cudaStream_t stream_of(CollectiveMemory where, const char* what) const {
    if (!where.device)
      fail(
          "the NCCL collective's {} takes device memory on a stream, not host memory (the host "
          "collective takes that)",
          what);
    return static_cast<cudaStream_t>(where.stream);
  }

  ncclResult_t async_error() const {
    ncclResult_t st = ncclSuccess;
    if (comm_) ncclCommGetAsyncError(comm_, &st);
    return st;
  }

  std::string error_text(ncclResult_t st) const {
    const char* last = ncclGetLastError(comm_);
    return fmt::format("{}{}{}", ncclGetErrorString(st), last != nullptr && *last ? ": " : "",
                       last != nullptr ? last : "");
  }

  void check(ncclResult_t st, const char* what) const {
    if (st == ncclSuccess) return;
    fail("NCCL: {} failed on rank {} of {} (device {}): {}", what, host_.rank(), host_.world(),
         device_, error_text(st));
  }

  Collective& host_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  std::string version_;
  uint64_t next_ticket_ = 1;
  std::deque<std::pair<uint64_t, gpu::EventHandle>> pending_;  // started, not yet waited for
  std::chrono::steady_clock::time_point next_look_{};          // stop_if_peer_ended's next look
};

}  // namespace

std::unique_ptr<Collective> make_device_collective(Collective& host, int device) {
  return std::make_unique<NcclCollective>(host, device);
}

}  // namespace stoker
