// SPDX-License-Identifier: Apache-2.0
#include "tools/setup/evaluate.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "loader/iterator.h"
#include "tools/setup/trainer.h"

namespace stoker {

namespace {

// Whether `label` is among the k largest logits (ties count against: a label must beat them).
bool in_top_k(const float* logits, int classes, int32_t label, int k) {
  int above = 0;
  for (int c = 0; c < classes; ++c)
    if (logits[c] > logits[label] || (logits[c] == logits[label] && c < label)) ++above;
  return above < k;
}

}  // namespace

LoaderConfig evaluation_loader(const LoaderOptions& l, const char* who,
                               const SizeSchedule& schedule, int size, int resize) {
  LoaderOptions vo = l;
  vo.transform = "center";
  vo.no_shuffle = true;
  vo.size_schedule.clear();
  if (size > 0) {
    vo.size = size;
    vo.height = 0;
  } else if (schedule.active()) {
    vo.size = schedule.max;
    vo.height = 0;
  }
  LoaderConfig c = vo.to_config();
  c.reader = l.one_reader(who);
  if (resize > 0) {
    const int crop = std::max(c.transform.out_width(), c.transform.out_height());
    if (resize < crop)
      usage_fail("{}: --val-resize {} is smaller than the validation crop {} (--val-size)", who,
                 resize, crop);
    c.transform.resize = resize;
  }
  return c;
}

EvalResult evaluate(Backend& backend, const Index& index, const LoaderConfig& config, int classes,
                    int64_t batch, const std::string& label, bool progress_line,
                    const GpuDecodeOptions& gpu) {
  STOKER_CHECK(int64_t(config.sampler.batch_size) == batch);
  const TrainerFeed data = evaluation_feed(index, config, backend, gpu);
  const size_t batches = data.iterator->batches_per_epoch();  // the short last one included
  EvalResult r;
  int64_t top1 = 0, top5 = 0;
  double loss = 0;
  Progress progress(label, index.size(), "images", progress_line);
  for (size_t k = 0; k < batches; ++k) {
    HostBatch hb = data.feed().next();
    const Batch& b = *data.loader->last_batch();
    // A short last batch still fills the planned batch: the pool's tensor has room for it,
    // and only its first b.size rows are read back.
    hb.count = batch;
    // Evaluation may run at its own size (train --val-size): the backend re-plans for it (GPU
    // decode did already: a no-op then), and the training loop's next step re-plans back.
    if (hb.height > 0) backend.reshape(hb.height, hb.width);
    backend.stage(hb);
    backend.forward_eval();
    const std::span<const float> logits = backend.logits();  // waits for the forward
    for (size_t i = 0; i < b.size; ++i) {
      const float* row = logits.data() + i * size_t(classes);
      const int32_t y = b.labels[i];
      top1 += in_top_k(row, classes, y, 1);
      top5 += in_top_k(row, classes, y, std::min(5, classes));
      double mx = row[0], sum = 0;
      for (int c = 1; c < classes; ++c) mx = std::max(mx, double(row[c]));
      for (int c = 0; c < classes; ++c) sum += std::exp(double(row[c]) - mx);
      loss += std::log(sum) + mx - double(row[y]);
    }
    backend.release_input();  // the logits are read: the feed may now reuse the batch's buffer
    r.images += int64_t(b.size);
    uint64_t bytes = 0;  // the files read, for the progress line's MB and MB/s
    for (size_t i = 0; i < b.size; ++i) bytes += index.bytes[b.indices[i]];
    progress.add(b.size, bytes);
    if (interrupted()) {
      r.interrupted = true;
      break;
    }
  }
  progress.finish();
  r.skipped = data.iterator->bad_samples().count();
  if (r.images > 0) {
    const double n = double(r.images);
    r.top1 = double(top1) / n;
    r.top5 = double(top5) / n;
    r.loss = loss / n;
  }
  return r;
}

}  // namespace stoker
