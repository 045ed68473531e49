// SPDX-License-Identifier: Apache-2.0
// The loader's memory hook (loader/host_memory.h): every reader's batch tensors come from
// `allocate` and go back through `release`; processes:N pins its shared pool while it is
// mapped. Counting hooks over real heap memory, and the batches stay the same bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "loader/iterator.h"
#include "loader_test_util.h"
#include "test_util.h"
#include "tools/gen_dataset.h"

namespace stoker {
namespace {

struct Counting {
  std::map<void*, size_t> live;
  int allocations = 0, releases = 0, pins = 0, unpins = 0;
  size_t pinned_bytes = 0;
  LoaderMemory hook() {
    LoaderMemory m;
    m.allocate = [this](size_t bytes) {
      void* p = std::aligned_alloc(4096, bytes);
      live[p] = bytes;
      ++allocations;
      return p;
    };
    m.release = [this](void* p) {
      EXPECT_EQ(live.erase(p), 1u);
      std::free(p);
      ++releases;
    };
    m.pin = [this](void*, size_t bytes) {
      ++pins;
      pinned_bytes = bytes;
    };
    m.unpin = [this](void*) { ++unpins; };
    return m;
  }
};

TEST(LoaderMemory, EveryReaderUsesTheHookAndTheBatchesStayTheSame) {
  test::TempDir d;
  const Index index = open_index(test::make_dataset(d, GenPattern::photo, 64, 2, 8));
  LoaderConfig plain;
  plain.sampler.batch_size = 4;
  plain.sampler.seed = 3;
  plain.transform.size = 32;
  plain.warn = false;
  plain.reader = parse_reader("serial");
  Iterator reference(index, plain);
  const test::EpochRecord want = test::run_epoch(reference, 0);
  for (const char* reader : {"serial", "threads:2", "processes:2"}) {
    Counting count;
    {
      LoaderConfig c = plain;
      c.reader = parse_reader(reader);
      c.memory = count.hook();
      Iterator it(index, c);
      EXPECT_EQ(test::run_epoch(it, 0).epoch_checksum, want.epoch_checksum) << reader;
    }
    if (std::string(reader).starts_with("processes")) {
      EXPECT_EQ(count.allocations, 0) << reader;  // one shared pool, pinned instead
      EXPECT_EQ(count.pins, 1) << reader;
      EXPECT_GE(count.pinned_bytes, 4u * 3 * 32 * 32 * 4) << reader;
      EXPECT_EQ(count.unpins, 1) << reader;
    } else {
      EXPECT_GT(count.allocations, 0) << reader;
      EXPECT_EQ(count.releases, count.allocations) << reader;
      EXPECT_TRUE(count.live.empty()) << reader;
    }
  }
}

}  // namespace
}  // namespace stoker
