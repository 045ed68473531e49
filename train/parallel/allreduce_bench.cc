// SPDX-License-Identifier: Apache-2.0
// stoker-allreduce: times the host Collective's all-reduce (train/parallel) on a buffer the size
// of a network's gradients (default ResNet-50's, fp32), and beside it one MPI_Allreduce of
// the same buffer, under mpirun (scripts/mpirun_local.sh N build/train/parallel/stoker-allreduce).
// Prints `#` context lines, then one row per engine: median/p10/p90 ms, algorithm and bus
// bandwidth (the ring model's 2(N-1)/N x bytes per rank), and a correctness column. Rank 0
// prints; --json writes {context, results}. Not a training run: no backend, no overlap.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "common/stats.h"
#include "common/system_info.h"
#include "models/resnet.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

struct Row {
  std::string engine;
  std::vector<double> seconds;
  bool correct = true;
};

// Rank r's element i: small integers, so every sum is exact and checkable whatever the order.
float value(int r, size_t i) {
  return float((size_t(r) * 7 + i) % 61);
}

// Times `repeats` all-reduces (after `warmup` untimed) of `n` floats; every rank starts each
// one together (a barrier), so the time is the collective's, not a late rank's.
template <class F>
Row run(const std::string& engine, Collective& world, size_t n, int warmup, int repeats, F sum) {
  Row row{engine, {}, true};
  std::vector<float> x(n);
  for (int k = 0; k < warmup + repeats; ++k) {
    for (size_t i = 0; i < n; ++i) x[i] = value(world.rank(), i);
    world.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    sum(x.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (k >= warmup) row.seconds.push_back(s);
    for (size_t i = 0; i < n && row.correct; ++i) {
      float want = 0;
      for (int r = 0; r < world.world(); ++r) want += value(r, i);
      row.correct = x[i] == want;
    }
  }
  // The slowest rank's times: a collective ends when its last rank is done.
  std::vector<double> slowest = row.seconds;
  std::vector<double> mine = row.seconds;
  world.barrier();
  for (size_t k = 0; k < mine.size(); ++k) {
    // max over ranks through sums of one-hot slots: the Collective has only a sum.
    std::vector<float> all(size_t(world.world()), 0.0f);
    all[size_t(world.rank())] = float(mine[k]);
    world.allreduce_sum(all.data(), all.size());
    slowest[k] = *std::max_element(all.begin(), all.end());
  }
  float bad = row.correct ? 0.0f : 1.0f;
  world.allreduce_sum(&bad, 1);
  row.correct = bad == 0;
  row.seconds = slowest;
  return row;
}

int main_bench(int argc, char** argv) {
  CLI::App app{"stoker-allreduce: the host all-reduce on a network's gradients (under mpirun)"};
  std::string arch = "resnet50", json;
  double mib = 0;
  int warmup = 2, repeats = 10;
  app.add_option("--arch", arch, "Size the buffer as this ResNet's trainable parameters")
      ->capture_default_str();
  app.add_option("--mib", mib, "Or a buffer of this many MiB of fp32 instead");
  app.add_option("--warmup", warmup, "Untimed all-reduces first")->capture_default_str();
  app.add_option("--repeats", repeats, "Timed all-reduces (median, p10, p90 of them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--json", json, "Write {context, results} here (rank 0)");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<Collective> world = make_host_collective();
  ResNetConfig rc = parse_resnet_arch(arch);
  const size_t n =
      mib > 0 ? size_t(mib * 1024 * 1024 / 4) : size_t(trainable_count(build_resnet(rc)));
  const double bytes = 4.0 * double(n);
  const int w = world->world();
  const double ring = w > 1 ? 2.0 * double(w - 1) / double(w) * bytes : 0.0;

  std::vector<Row> rows;
  rows.push_back(run("stoker (reduce-scatter + all-gather)", *world, n, warmup, repeats,
                     [&](float* p, size_t k) { world->allreduce_sum(p, k); }));
  int level = 0;
  MPI_Query_thread(&level);
  // MPI_Allreduce straight from this thread: Open MPI's own algorithm choice, for reference.
  if (mpi_built() && mpirun_world() && level == MPI_THREAD_MULTIPLE)
    rows.push_back(run("MPI_Allreduce", *world, n, warmup, repeats, [&](float* p, size_t k) {
      MPI_Allreduce(MPI_IN_PLACE, p, int(k), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }));
  if (world->rank() != 0) return 0;

  std::printf("# stoker-allreduce %s: %s\n", STOKER_VERSION, world->describe().c_str());
  std::printf("# machine: %s, %d cores, Linux %s\n", cpu_model().c_str(), online_cpus(),
              kernel_release().c_str());
  std::printf("# buffer: %zu fp32 (%.1f MB)%s; ring model: %.1f MB sent and received per rank\n", n,
              bytes / 1e6, mib > 0 ? "" : (" = " + arch + "'s gradients").c_str(), ring / 1e6);
  std::printf("# %d warm-up, %d timed; times are the slowest rank's\n", warmup, repeats);
  std::printf("%-38s %9s %9s %9s %10s %10s %8s\n", "engine", "med ms", "p10 ms", "p90 ms",
              "alg GB/s", "bus GB/s", "correct");
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows) {
    const double med = quantile(r.seconds, 0.5);
    std::printf("%-38s %9.2f %9.2f %9.2f %10.2f %10.2f %8s\n", r.engine.c_str(), 1e3 * med,
                1e3 * quantile(r.seconds, 0.1), 1e3 * quantile(r.seconds, 0.9), bytes / med / 1e9,
                ring / med / 1e9, r.correct ? "yes" : "NO");
    results.push_back({{"engine", r.engine},
                       {"median_ms", 1e3 * med},
                       {"p10_ms", 1e3 * quantile(r.seconds, 0.1)},
                       {"p90_ms", 1e3 * quantile(r.seconds, 0.9)},
                       {"alg_gb_per_s", bytes / med / 1e9},
                       {"bus_gb_per_s", ring / med / 1e9},
                       {"seconds", r.seconds},
                       {"correct", r.correct}});
  }
  if (!json.empty()) {
    nlohmann::json context = machine_context();
    context.update({{"tool", "stoker-allreduce"},
                    {"version", STOKER_VERSION},
                    {"collective", world->describe()},
                    {"world", w},
                    {"floats", n},
                    {"bytes", bytes},
                    {"ring_bytes_per_rank", ring},
                    {"warmup", warmup},
                    {"repeats", repeats}});
    std::ofstream(json) << nlohmann::json{{"context", context}, {"results", results}}.dump(2)
                        << "\n";
  }
  bool ok = true;
  for (const Row& r : rows) ok = ok && r.correct;
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  try {
    return stoker::main_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoker-allreduce: error: %s\n", e.what());
    return 1;
  }
}
