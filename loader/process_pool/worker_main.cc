// SPDX-License-Identifier: Apache-2.0
// stoker-worker: one decode process of the processes:N reader, started by the parent with
// posix_spawn (not by hand). It maps the shared index read-only and the batch memory
// read-write, then answers requests in order: read, decode, augment and collate one sample
// straight into its batch slot. It exits when the parent closes the socket or dies.
//
// Test hooks (environment): STOKER_WORKER_CRASH_ON=<text> makes it abort() on any sample
// whose path contains <text>, and STOKER_WORKER_HANG_ON=<text> makes it stop answering: a
// reliable poisonous file for the crash and time-out tests, with no decoder touched.
// STOKER_WORKER_DIE_HOLDING=<n>:<file>: the one worker that removes <file> reads n requests,
// answers none and kills itself (a worker lost with several requests outstanding).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.h"
#include "loader/process_pool/process_pool_memory.h"
#include "loader/process_pool/worker_protocol.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {
namespace {

struct WorkerState {
  WorkerSetup setup;
  Normalizer normalizer;
  SharedIndexView index;
  char* batches;  // the pool's tensors, batch_bytes long
  size_t batch_bytes;
  SampleScratch w;  // its source is made from setup.source and the shared index's root
  const char* crash_on = std::getenv("STOKER_WORKER_CRASH_ON");
  const char* hang_on = std::getenv("STOKER_WORKER_HANG_ON");
};

bool path_has(const std::string& path, const char* text) {
  return text && *text && path.find(text) != std::string::npos;
}

// One request: the path comes from the shared index, the work is the loader's own
// attempt_sample, so every reader produces the same bytes.
uint64_t run_sample(WorkerState& s, const SampleRequest& r, SampleTiming& t) {
  SampleScratch& w = s.w;
  OutputSpec spec = s.normalizer.spec;
  spec.width = r.width;
  spec.height = r.height;
  const size_t dst_bytes = spec.sample_bytes();
  SampleLocation where;
  STOKER_CHECK(s.index.locate(r.index, w.location, where));
  STOKER_CHECK(s.index.path(r.index, w.name));
  STOKER_CHECK(r.width > 0 && r.height > 0 && r.offset + dst_bytes <= s.batch_bytes);
  if (path_has(w.name, s.crash_on)) {
    prctl(PR_SET_DUMPABLE, 0);  // no core file for a deliberate crash
    std::abort();
  }
  while (path_has(w.name, s.hang_on)) pause();
  const SampleRecipe recipe =
      recipe_for({s.setup.transform, s.setup.seed, s.setup.no_decode}, spec);
  return attempt_sample(recipe, s.normalizer, w, where, r.epoch, r.index, r.attempt,
                        s.batches + r.offset, nullptr, t);
}

void serve() {
  WorkerSetup setup;
  if (recv_packet(kWorkerSocketFd, &setup, sizeof setup, true) != sizeof setup ||
      setup.protocol != kWorkerProtocol || setup.size != sizeof setup) {
    fail("the start-up message from the parent does not match this build of stoker-worker");
  }
  size_t index_bytes = 0, batch_bytes = 0;
  const void* index = map_shared(kWorkerIndexFd, false, index_bytes, "the shared index");
  void* batches = map_shared(kWorkerBatchFd, true, batch_bytes, "the shared batch memory");
  close(kWorkerIndexFd);  // the mappings stay
  close(kWorkerBatchFd);
  WorkerState s{setup,
                Normalizer(setup.output),
                SharedIndexView(index, index_bytes),
                static_cast<char*>(batches),
                batch_bytes,
                SampleScratch(setup.decode, nullptr)};
  s.w.source = make_source(
      SourceSpec{std::string(s.index.root_text()), s.index.sharded(), from_wire(setup.source)});
  cv::setNumThreads(0);  // one sample at a time on one core: the parent runs N of us
  const WorkerReady ready;
  if (!send_packet(kWorkerSocketFd, &ready, sizeof ready)) return;
  SampleRequest request;
  if (const char* hold = std::getenv("STOKER_WORKER_DIE_HOLDING")) {
    const char* colon = std::strchr(hold, ':');
    if (colon && unlink(colon + 1) == 0) {
      for (long n = std::atol(hold); n > 0; --n) {
        if (recv_packet(kWorkerSocketFd, &request, sizeof request, true) <= 0) return;
      }
      prctl(PR_SET_DUMPABLE, 0);
      raise(SIGKILL);
    }
  }
  while (true) {
    const ssize_t n = recv_packet(kWorkerSocketFd, &request, sizeof request, true);
    if (n == 0) return;  // the parent is done with us
    STOKER_CHECK(n == sizeof request);
    SampleReply reply;
    reply.tag = request.tag;
    try {
      reply.hash = run_sample(s, request, reply.timing);
    } catch (const SourceBroken& e) {
      reply.status = SampleStatus::internal;  // the storage is gone: the run stops
      reply.set_reason(e.what());
    } catch (const Error& e) {
      reply.status = SampleStatus::bad_input;
      reply.set_reason(e.what());
    } catch (const std::exception& e) {
      reply.status = SampleStatus::internal;
      reply.set_reason(fmt::format("{}: {}", s.w.name, e.what()));
    }
    if (!send_packet(kWorkerSocketFd, &reply, reply.wire_size())) return;
  }
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "stoker-worker: started by stoker's processes:N reader, not by hand\n");
    return 2;
  }
  // Die with the parent even if it is killed with SIGKILL; it may have gone already.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != static_cast<pid_t>(std::atol(argv[1]))) return 1;
  // Ctrl-C reaches the whole process group: what happens to workers is the parent's call.
  signal(SIGINT, SIG_IGN);
  try {
    stoker::serve();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoker-worker: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
