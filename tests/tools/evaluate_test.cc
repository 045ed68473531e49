// SPDX-License-Identifier: Apache-2.0
// evaluate (tools/setup/evaluate.h), the pass behind `stoker eval` and `train --val`, on a
// backend that keeps count: its batches come through the training set-up's feed, so they are
// allocated by the backend's host memory, every one (the short last one too) is staged at the
// planned batch, and each is released (Backend::release_input) before the next is staged and
// once the pass is over, as train/backend.h asks of every loop. The logits name each image's
// label, so top-1 and the loss are known.
#include "tools/setup/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "test_util.h"
#include "tools/gen/gen_dataset.h"
#include "tools/options/loader_options.h"

namespace stoker {
namespace {

// Logits 4 for the staged label, 0 elsewhere; counts what the pass asks of it.
class CountingBackend final : public Backend, public BackendDiagnostics {
 public:
  // A network of no layers: the fronts check the batch and the labels against it.
  CountingBackend(int classes, int64_t batch)
      : Backend({}, Network{.name = "counting", .num_classes = classes, .tensors = {"input"}},
                {.batch = batch, .height = 1, .width = 1}, "counting"),
        classes_(classes),
        batch_(batch) {}
  std::string describe() const override { return "counting"; }
  HostMemory host_memory() const override {
    HostMemory m;
    m.allocate = [this](size_t bytes) {
      ++allocations;
      return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    };
    m.release = [](void* p) { std::free(p); };
    return m;
  }
  void load(const Checkpoint&, std::string_view) override {}
  Checkpoint save() const override { return {}; }
  Checkpoint gradients() const override { return {}; }
  void stage_impl(const HostBatch& batch) override {
    if (stages > releases) ++staged_unreleased;  // the last batch's buffer still in use
    ++stages;
    counts.push_back(batch.count);
    labels_.assign(batch.labels, batch.labels + batch.count);
  }
  void release_input() override { ++releases; }
  void reshape_impl(int64_t, int64_t) override {}
  void forward_backward() override {}
  void update(const SgdConfig&, float) override {}
  std::vector<StepResult> collect() override { return {}; }
  void forward_eval() override {
    logits_.assign(size_t(batch_ * classes_), 0.0f);
    for (size_t i = 0; i < labels_.size(); ++i) logits_[i * size_t(classes_) + labels_[i]] = 4;
  }
  std::span<const float> logits() override { return logits_; }
  BackendDiagnostics& diagnostics() override { return *this; }
  std::vector<ActivityRecord> take_activity() override { return {}; }
  std::vector<ConvChoice> algorithms() const override { return {}; }

  mutable int allocations = 0;
  int stages = 0, releases = 0, staged_unreleased = 0;
  std::vector<int64_t> counts;

 private:
  int classes_;
  int64_t batch_;
  std::vector<int32_t> labels_;
  std::vector<float> logits_;
};

TEST(Evaluate, PullsTheTrainingFeedAndReleasesEveryBatch) {
  test::TempDir tmp;
  GenConfig g;
  g.out = tmp / "val";
  g.sizes = {32};
  g.classes = 3;
  g.per_class = 5;  // 15 images: batches of 4, 4, 4 and a short 3
  g.progress = false;
  generate_dataset(g);
  const Index index = open_index(g.out);
  LoaderOptions l;
  l.reader = "serial";
  l.batch = 4;
  l.size = 24;
  const LoaderConfig lc = evaluation_loader(l, "test");
  CountingBackend backend(3, 4);

  const EvalResult r = evaluate(backend, index, lc, 3, 4, "val", /*progress=*/false);
  EXPECT_EQ(r.images, 15);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.top1, 1.0);
  EXPECT_EQ(r.top5, 1.0);
  EXPECT_NEAR(r.loss, std::log(2 + std::exp(4.0)) - 4, 1e-9);
  EXPECT_GT(backend.allocations, 0) << "the loader's batches are not in the backend's memory";
  EXPECT_EQ(backend.counts, (std::vector<int64_t>{4, 4, 4, 4})) << "staged at the planned batch";
  EXPECT_EQ(backend.releases, 4) << "one release_input per batch";
  EXPECT_EQ(backend.staged_unreleased, 0) << "a batch staged before the last was released";
}

}  // namespace
}  // namespace stoker
