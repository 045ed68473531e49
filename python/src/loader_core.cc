// SPDX-License-Identifier: Apache-2.0
#include "python/src/loader_core.h"

#include <pybind11/pybind11.h>

#include "common/clock.h"
#include "common/system_info.h"

namespace stoker::py {

namespace {

// Thrown by the poll hook once Python has a pending exception (KeyboardInterrupt from
// Ctrl-C): unwinds the C++ wait, then becomes that exception with the GIL held again.
struct PythonErrorPending {};

}  // namespace

BatchLease::BatchLease(std::shared_ptr<LoaderCore> core, const Batch* batch)
    : core_(std::move(core)), batch_(batch) {
  ++core_->held_;
}

BatchLease::~BatchLease() {
  // May run on any thread, with or without the GIL (a DLPack deleter): touches no Python.
  core_->it_->release(batch_);
  --core_->held_;
}

LoaderCore::LoaderCore(const std::string& dataset, LoaderConfig config) {
  t0_ = now_ns();
  cpu0_ = process_cpu_seconds();
  // Ctrl-C: a signal does not wake a blocked wait, so the wait asks Python every 50 ms.
  // PyErr_CheckSignals runs the handlers on the main thread only (elsewhere it returns 0).
  config.poll = [] {
    pybind11::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw PythonErrorPending{};
  };
  pool_batches_ = config.reader.kind == ReaderSpec::Kind::serial ? 1 + config.keep
                                                                 : stoker::pool_batches(config);
  index_ = open_index(dataset);
  it_ = std::make_unique<Iterator>(index_, config);
}

LoaderCore::~LoaderCore() = default;

void LoaderCore::start(uint64_t epoch, uint64_t position) {
  pybind11::gil_scoped_release nogil;
  it_->start_epoch(epoch, position);
  whole_epoch_ = position == 0;
}

std::shared_ptr<BatchLease> LoaderCore::next() {
  const Batch* batch = nullptr;
  try {
    pybind11::gil_scoped_release nogil;
    const int64_t w0 = now_ns();
    batch = it_->next();
    if (batch != nullptr) {
      it_->retain();
      stats_.add_batch(*batch, now_ns() - w0);
    } else if (whole_epoch_) {
      stats_.epoch_checksums.push_back(hex64(it_->epoch_checksum()));
      whole_epoch_ = false;  // once per epoch, however often next() is called at its end
    }
  } catch (const PythonErrorPending&) {
    throw pybind11::error_already_set();
  }
  if (batch == nullptr) return nullptr;
  return std::make_shared<BatchLease>(shared_from_this(), batch);
}

std::string LoaderCore::stats_json() {
  stats_.wall_ns = now_ns() - t0_;
  stats_.cpu_seconds = process_cpu_seconds() - cpu0_;
  return stats_.to_json(*it_).dump();
}

}  // namespace stoker::py
