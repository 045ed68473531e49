// SPDX-License-Identifier: Apache-2.0
// The group of processes a data-parallel run trains in, as the backends and the loop see it:
// a rank, a world size, and the few collectives data parallelism needs. Implementations sit
// on existing engines: MPI between CPU processes (train/parallel/collective_mpi.cc), NCCL between
// GPUs (train/parallel/collective_nccl.cc). A single process is a world of one (no engine).
// Not a transport of our own, and not thread-safe beyond what each method says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace stoker {

// Where a tensor handed to a collective lives. MPI takes host memory; NCCL takes device
// memory and enqueues on the given CUDA stream (cudaStream_t passed as void*).
struct CollectiveMemory {
  bool device = false;
  void* stream = nullptr;  // device only
};

class Collective {
 public:
  virtual ~Collective() = default;

  virtual int rank() const = 0;
  virtual int world() const = 0;
  // "mpi (OpenMPI 4.1.4), 2 ranks", "nccl 2.x, 8 ranks", "single process".
  virtual std::string describe() const = 0;

  // Sums `n` floats across ranks, in place, and returns when the result is there (host) or
  // enqueued on the stream (device). Every rank gets bit-identical results.
  virtual void allreduce_sum(float* data, size_t n, CollectiveMemory where = {}) = 0;

  // The same, started now and finished by wait(ticket): gradient buckets go out while the
  // backward goes on. Tickets finish in the order they were started. Host memory must stay
  // untouched, and allocated, until wait() returns; device work is ordered on the stream.
  // A host collective's wait() returns or throws only once the work no longer touches that
  // memory: a wait that cannot finish (after a signal, a peer has ended) prints why and ends
  // the job itself (abort), since the memory it holds can never be handed back. A caller that
  // fails for another reason with tickets in flight must likewise abort() before that memory
  // is freed (tools/train/cmd_train.cc).
  virtual uint64_t start_allreduce_sum(float* data, size_t n, CollectiveMemory where = {}) = 0;
  virtual void wait(uint64_t ticket) = 0;

  // Rank `root`'s bytes to every rank (weights at start-up, BN buffers before a checkpoint).
  virtual void broadcast(void* data, size_t bytes, int root, CollectiveMemory where = {}) = 0;
  virtual void barrier() = 0;

  // Device collectives, whose work runs on streams the host waits on elsewhere: throws
  // stoker::Error naming the rank and the reason when an operation failed asynchronously
  // (a peer gone, a network error), after aborting the communicator so that its kernels end
  // and the streams they hold can be synchronised and destroyed. Host collectives: nothing.
  virtual void check_async() {}
  // Ends the communicator's work now (its kernels return) without ending the process: for a
  // caller that gave up waiting on a stream holding collective work. Host collectives: nothing.
  virtual void abort_communicator() {}

  // After a signal: which peer is known to have ended ("rank 1 (pid 4321) has ended"), or empty
  // when none is known to have (alive, or this collective cannot tell: another machine, or a
  // collective without processes of its own). For a wait elsewhere that must not outlast a
  // dead peer (the NCCL collective's check_async).
  virtual std::string ended_peer() const { return {}; }

  // Ends the whole job now, from any rank, with `code` as the exit status: what a rank does
  // when it cannot go on, so that no other rank waits forever in a collective.
  [[noreturn]] virtual void abort(int code) = 0;
};

// The world this process was started in: MPI's when launched by mpirun (OMPI_COMM_WORLD_SIZE
// set) and built with MPI, else a single process. stoker::Error when launched by mpirun in
// a build without MPI. `label` starts the line a wait prints when it ends the job
// ("stoker train: rank 0 of 2: stopped: ...").
std::unique_ptr<Collective> make_host_collective(const std::string& label = "stoker");

}  // namespace stoker
