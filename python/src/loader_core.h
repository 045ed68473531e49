// SPDX-License-Identifier: Apache-2.0
// What one stoker.Loader holds on the C++ side: the dataset index, the Iterator and the
// statistics `stoker bench` keeps; and the lease on one batch that Python references keep
// alive. Not Python-specific beyond the GIL and Ctrl-C: the batches, their order, their
// checksums and the pool are the C++ loader's own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/loader_stats.h"
#include "loader/tuning/reader_tuner.h"

namespace stoker::py {

class LoaderCore;

// One batch handed to Python. Its buffer stays out of the pool until the lease is gone (the
// last NumPy array or DLPack tensor over it dropped); the lease keeps the core alive.
class BatchLease {
 public:
  BatchLease(std::shared_ptr<LoaderCore> core, const Batch* batch);
  ~BatchLease();
  BatchLease(const BatchLease&) = delete;
  BatchLease& operator=(const BatchLease&) = delete;
  const Batch& batch() const { return *batch_; }

 private:
  std::shared_ptr<LoaderCore> core_;
  const Batch* batch_;
};

class LoaderCore : public std::enable_shared_from_this<LoaderCore> {
 public:
  // Opens `dataset` (as the CLI does) and starts the reader. Call without the GIL. With
  // `tune` (reader="auto"), a ReaderTuner chooses the reader while the loop runs, judging each
  // candidate by the Python loop's own steps (the time from one next() to the following one).
  LoaderCore(const std::string& dataset, LoaderConfig config,
             const std::optional<TunerLimits>& tune = std::nullopt);
  ~LoaderCore();

  // Epoch `epoch` from sample `position` (a batch boundary) on.
  void start(uint64_t epoch, uint64_t position);
  // The next batch, or null at the end of the epoch. Waits without the GIL; Ctrl-C during
  // the wait raises KeyboardInterrupt (pybind11::error_already_set). Call with the GIL.
  std::shared_ptr<BatchLease> next();

  Position position() const { return it_->position(); }
  size_t batches_per_epoch() const { return it_->batches_per_epoch(); }
  size_t dataset_size() const { return index_.size(); }
  const std::vector<std::string>& classes() const { return index_.classes; }
  // Class directories with no image (their labels are kept), as `stoker index` warns.
  const std::vector<std::string>& empty_classes() const { return index_.empty_classes; }
  // Batches Python holds now, and the most it may hold (the pool).
  size_t held() const { return held_.load(); }
  size_t pool_batches() const;
  size_t pool_bytes() const { return it_->pool_bytes(); }
  // `stoker bench`'s JSON for this loader so far (docs/FORMATS.md), as a string.
  std::string stats_json();

 private:
  friend class BatchLease;
  Index index_;
  std::unique_ptr<Iterator> it_;
  std::unique_ptr<ReaderTuner> tuner_;  // reader="auto" only
  std::atomic<size_t> held_{0};
  LoaderStats stats_;
  int64_t t0_ = 0;
  double cpu0_ = 0;
  bool whole_epoch_ = false;  // the current epoch started at 0: its checksum is the CLI's
};

}  // namespace stoker::py
