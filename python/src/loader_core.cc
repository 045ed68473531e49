// SPDX-License-Identifier: Apache-2.0
#include "python/src/loader_core.h"

#include <pybind11/pybind11.h>

#include "common/clock.h"
#include "common/system_info.h"
#include "loader/tuning/tuning_candidates.h"
#include "tools/tuning_report.h"

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

LoaderCore::LoaderCore(const std::string& dataset, LoaderConfig config,
                       const std::optional<TunerLimits>& tune) {
  t0_ = now_ns();
  cpu0_ = process_cpu_seconds();
  // Ctrl-C: a signal does not wake a blocked wait, so the wait asks Python every 50 ms.
  // PyErr_CheckSignals runs the handlers on the main thread only (elsewhere it returns 0).
  config.poll = [] {
    pybind11::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw PythonErrorPending{};
  };
  index_ = open_index(dataset);
  it_ = std::make_unique<Iterator>(index_, config);
  if (tune)
    tuner_ = std::make_unique<ReaderTuner>(*it_, reader_candidates(online_cpus(), config.prefetch),
                                           *tune);
}

LoaderCore::~LoaderCore() = default;

size_t LoaderCore::pool_batches() const {
  // The running reader's pool: under reader="auto" it changes with the reader (serial keeps
  // none ahead). Batches of a reader switched out are counted in held() too, so Python copies
  // sooner after a switch, never later.
  const LoaderConfig& c = it_->config();
  return it_->reader().kind == ReaderSpec::Kind::serial ? 1 + c.keep : stoker::pool_batches(c);
}

void LoaderCore::start(uint64_t epoch, uint64_t position) {
  pybind11::gil_scoped_release nogil;
  if (tuner_) {
    tuner_->start_epoch(epoch, position);
  } else {
    it_->start_epoch(epoch, position);
  }
  whole_epoch_ = position == 0;
}

std::shared_ptr<BatchLease> LoaderCore::next() {
  const Batch* batch = nullptr;
  try {
    pybind11::gil_scoped_release nogil;
    const int64_t w0 = now_ns();
    batch = tuner_ ? tuner_->next() : it_->next();
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
  nlohmann::json j = stats_.to_json(*it_);
  if (tuner_) j["reader_tuning"] = tuning_json(tuner_->report());
  return j.dump();
}

}  // namespace stoker::py
