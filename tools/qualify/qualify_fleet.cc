// SPDX-License-Identifier: Apache-2.0
#include "tools/qualify/qualify_fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/measures.h"
#include "common/stats.h"
#include "common/system_info.h"
#include "loader/iterator.h"
#include "tools/bench/emulated_consumer.h"
#include "tools/qualify/qualify_spec.h"
#include "tools/study/machine_load.h"

namespace stoker {

namespace {

// One accelerator's run, as its thread measured it.
struct Member {
  std::unique_ptr<Iterator> iterator;
  ConsumerResult consumed;
  uint64_t images = 0, bytes = 0;  // in its window
  uint64_t delivered = 0;          // images, warm-up included
  std::exception_ptr error;
};

// Its batches: the warm-up, then enough for a verdict and for `seconds` at its full rate.
size_t batches_for(const FleetRun& run, const EmulatedAccelerator& a, size_t batch,
                   size_t prefetch) {
  const double at_rate = std::ceil(run.seconds * a.images_per_s() / double(batch));
  return run.warmup + std::max({kMinJudgedBatches, kPrefetchMultiple * prefetch, size_t(at_rate)});
}

void feed_one(Member& m, const EmulatedAccelerator& a, const ConsumerRun& cr, std::latch& ready) {
  bool counted = false;
  try {
    ready.count_down();  // consume() starts the first fill: all fills start together
    counted = true;
    ready.wait();
    m.consumed = consume(
        *m.iterator, a, cr,
        [&](const ConsumedBatch& c) {
          m.delivered += c.batch->size;
          if (c.number < cr.warmup) return;
          m.images += c.batch->size;
          for (size_t k = 0; k < c.batch->size; ++k) m.bytes += c.batch->timing[k].bytes;
        },
        [](uint64_t, uint64_t) {});
  } catch (...) {
    m.error = std::current_exception();
    if (!counted) ready.count_down();
  }
}

nlohmann::json member_json(const Member& m) {
  const Utilisation& u = m.consumed.use;
  return {{"accelerator_utilisation", u.accelerator_utilisation()},
          {"images_per_s", images_per_s(double(m.images), u.window_s())},
          {"data_wait_share", data_wait_share(1e-9 * double(u.wait_ns), u.window_s())},
          {"batches", m.consumed.batches},
          {"window_s", u.window_s()}};
}

nlohmann::json fleet_json(const std::vector<Member>& fleet, const FleetRun& run, size_t prefetch,
                          size_t dataset_size, double elapsed, double loader_cpu,
                          double server_cpu) {
  nlohmann::json members = nlohmann::json::array();
  std::vector<double> aus;
  double ips = 0, mbps = 0, wait = 0;
  uint64_t delivered = 0;
  std::string short_window;
  bool all_met = true;
  for (const Member& m : fleet) {
    const Utilisation& u = m.consumed.use;
    const size_t timed = m.consumed.batches > run.warmup ? m.consumed.batches - run.warmup : 0;
    aus.push_back(u.accelerator_utilisation());
    all_met = all_met && u.accelerator_utilisation() >= kAuTarget;
    ips += images_per_s(double(m.images), u.window_s());
    mbps += u.window_s() > 0 ? 1e-6 * double(m.bytes) / u.window_s() : 0.0;
    wait += data_wait_share(1e-9 * double(u.wait_ns), u.window_s());
    delivered += m.delivered;
    if (short_window.empty()) short_window = not_enough_data(timed, u.window_s(), prefetch);
    members.push_back(member_json(m));
  }
  const double au_min = *std::min_element(aus.begin(), aus.end());
  // A window too short to judge hides the loader's rate behind its prefetch: AU is then an
  // upper bound, so below the target it fails; at or above it, it is not a pass.
  const bool held = all_met && short_window.empty();
  nlohmann::json j = {{"accelerators", fleet.size()},
                      {"held", held},
                      {"au_min", au_min},
                      {"au_median", median(aus)},
                      {"images_per_s", ips},
                      {"read_mb_per_s", mbps},
                      {"data_wait_share", wait / double(fleet.size())},
                      {"loader_cores_busy", elapsed > 0 ? loader_cpu / elapsed : 0.0},
                      {"server_cores_busy", elapsed > 0 ? server_cpu / elapsed : 0.0},
                      {"seconds", elapsed},
                      {"epochs", dataset_size ? double(delivered) / double(dataset_size) : 0.0},
                      {"per_accelerator", members}};
  if (all_met && !short_window.empty()) j["not_enough_data"] = short_window;
  return j;
}

}  // namespace

nlohmann::json run_fleet(const Index& index, const LoaderConfig& base,
                         const EmulatedAccelerator& accelerator, const FleetRun& run) {
  const int n = run.accelerators;
  STOKER_CHECK(n >= 1 && accelerator.enabled());
  std::vector<Member> fleet(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    LoaderConfig c = base;
    c.sampler.rank = uint32_t(i);
    c.sampler.world = uint32_t(n);
    fleet[size_t(i)].iterator = std::make_unique<Iterator>(index, c);
    if (fleet[size_t(i)].iterator->batches_per_epoch() == 0)
      fail("{} has {} images: fewer than one batch of {} for each of {} accelerators", index.root,
           index.size(), base.sampler.batch_size, n);
  }
  ConsumerRun cr;
  cr.warmup = run.warmup;
  cr.batches = batches_for(run, accelerator, base.sampler.batch_size, base.prefetch);
  const double server0 = run.server_cpu_seconds ? run.server_cpu_seconds() : 0;
  const double cpu0 = process_cpu_seconds();
  const LoadMark load0 = load_mark();
  const int64_t t0 = now_ns();
  // One that has not taken its batches by twice their time at full rate (and 2 s for the first
  // fill) cannot hold AU >= 90%: it stops there, starved.
  const double full_rate_s =
      double(cr.batches * base.sampler.batch_size) / accelerator.images_per_s();
  cr.deadline_ns = t0 + int64_t((2 * full_rate_s + 2) * 1e9);
  std::latch ready(n);
  std::vector<std::thread> threads;
  for (Member& m : fleet)
    threads.emplace_back(feed_one, std::ref(m), std::cref(accelerator), std::cref(cr),
                         std::ref(ready));
  for (std::thread& t : threads) t.join();
  const double elapsed = 1e-9 * double(now_ns() - t0);
  for (Member& m : fleet) m.iterator.reset();  // reaps processes:N's workers: CPU counted
  const double loader_cpu = process_cpu_seconds() - cpu0;
  const double server_cpu = run.server_cpu_seconds ? run.server_cpu_seconds() - server0 : 0;
  const nlohmann::json load = machine_load_json(load0);
  for (size_t i = 0; i < fleet.size(); ++i)
    if (fleet[i].error) try {
        std::rethrow_exception(fleet[i].error);
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        fail("accelerator {} of {}: {}", i + 1, n, e.what());
      }
  for (const Member& m : fleet)
    if (m.consumed.interrupted) throw Interrupted("qualify interrupted");
  nlohmann::json j =
      fleet_json(fleet, run, base.prefetch, index.size(), elapsed, loader_cpu, server_cpu);
  // The whole machine's busy cores over the run (ours, the server's and anyone else's): a
  // host busy with other work is still a host without a free core.
  j["machine_cores_busy"] = load.value("machine_cores_busy", nlohmann::json());
  return j;
}

}  // namespace stoker
