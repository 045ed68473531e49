// SPDX-License-Identifier: Apache-2.0
// The world of one: what a process started without mpirun trains in. Every collective is the
// identity, tickets finish at once, abort ends this process. No engine behind it.
#include <unistd.h>

#include <cstdio>

#include "common/error.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

class SingleCollective final : public Collective {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string describe() const override { return "single process"; }
  void allreduce_sum(float*, size_t, CollectiveMemory) override {}
  uint64_t start_allreduce_sum(float*, size_t, CollectiveMemory) override { return ++started_; }
  void wait(uint64_t ticket) override { STOKER_CHECK(ticket >= 1 && ticket <= started_); }
  void broadcast(void*, size_t, int root, CollectiveMemory) override { STOKER_CHECK(root == 0); }
  void barrier() override {}
  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }

 private:
  uint64_t started_ = 0;
};

}  // namespace

std::unique_ptr<Collective> make_single_collective() {
  return std::make_unique<SingleCollective>();
}

}  // namespace stoker
