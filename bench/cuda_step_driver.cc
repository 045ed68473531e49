// SPDX-License-Identifier: Apache-2.0
// Throughput of the GPU backend alone, for a machine with a GPU: one synthetic batch (u8 or
// f32, staged every step as a loader would), N warm-up and M timed training steps, then one
// JSON line: images/s over the timed steps (wall clock), mean phase times from the device's
// events over every timed step, peak device memory, the backend's description and, with
// --activity, the kernel count, busy share and lost records of the compute stream. Not a test (it
// asserts nothing); the figures go to docs/PERFORMANCE.md. Usage:
//   cuda_step_driver [--arch resnet50] [--batch 256] [--size 224] [--precision f16]
//                    [--layout auto] [--algo heuristic] [--graph] [--f32-input] [--activity]
//                    [--steps 50] [--warmup 10]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bench/timed_steps.h"
#include "common/clock.h"
#include "common/error.h"
#include "models/resnet.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/gpu/cupti_records.h"

namespace {

using namespace stoker;

struct Options {
  std::string arch = "resnet50", precision = "f16", layout = "auto", algo = "heuristic";
  int64_t batch = 256, size = 224;
  int steps = 50, warmup = 10;
  bool graph = false, f32_input = false, activity = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail("{} needs a value", a);
      return argv[++i];
    };
    if (a == "--arch")
      o.arch = value();
    else if (a == "--precision")
      o.precision = value();
    else if (a == "--layout")
      o.layout = value();
    else if (a == "--algo")
      o.algo = value();
    else if (a == "--batch")
      o.batch = std::stoll(value());
    else if (a == "--size")
      o.size = std::stoll(value());
    else if (a == "--steps")
      o.steps = std::stoi(value());
    else if (a == "--warmup")
      o.warmup = std::stoi(value());
    else if (a == "--graph")
      o.graph = true;
    else if (a == "--f32-input")
      o.f32_input = true;
    else if (a == "--activity")
      o.activity = true;
    else
      fail("unknown option {}", a);
  }
  return o;
}

Precision precision_of(std::string_view s) {
  if (s == "f32") return Precision::f32;
  if (s == "tf32") return Precision::tf32;
  if (s == "f16") return Precision::f16;
  if (s == "bf16") return Precision::bf16;
  fail("--precision {}: expected f32, tf32, f16 or bf16", s);
}

ComputeLayout layout_of(std::string_view s) {
  if (s == "auto") return ComputeLayout::automatic;
  if (s == "nchw") return ComputeLayout::nchw;
  if (s == "nhwc") return ComputeLayout::nhwc;
  fail("--layout {}: expected auto, nchw or nhwc", s);
}

int run(const Options& o) {
  const Network net = build_resnet(parse_resnet_arch(o.arch));
  BackendConfig c;
  c.batch = o.batch;
  c.height = c.width = o.size;
  c.input.dtype = o.f32_input ? DType::f32 : DType::u8;
  c.input.layout = o.f32_input ? Layout::nchw : Layout::nhwc;  // as decoded images come
  c.precision = precision_of(o.precision);
  c.layout = layout_of(o.layout);
  c.conv_algorithm = parse_conv_algorithm(o.algo);
  c.graph = o.graph;
  c.record_activity = o.activity;
  const int64_t t_plan = now_ns();
  std::unique_ptr<Backend> b = make_backend("cuda", net, c);
  b->load(init_checkpoint(net, 1), "init");
  const double plan_s = double(now_ns() - t_plan) * 1e-9;

  const size_t pixels = size_t(o.batch * 3 * o.size * o.size);
  HostMemory mem = b->host_memory();
  void* images = mem.allocate(pixels * c.input.element_bytes());
  std::vector<int32_t> labels(size_t(o.batch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t(i * 7 % size_t(net.num_classes));
  if (o.f32_input)
    std::fill_n(static_cast<float*>(images), pixels, 0.5f);
  else
    for (size_t i = 0; i < pixels; ++i) static_cast<uint8_t*>(images)[i] = uint8_t(i * 31 % 251);

  const SgdConfig sgd;
  const HostBatch batch{images, labels.data(), o.batch};
  test::run_steps(*b, batch, o.warmup, 64, sgd, 0.1f);
  b->diagnostics().take_activity();
  const int64_t t0 = now_ns();
  // Every timed step's result, collected every 64 steps (within kMaxPendingSteps).
  const std::vector<StepResult> results = test::run_steps(*b, batch, o.steps, 64, sgd, 0.1f);
  const double wall = double(now_ns() - t0) * 1e-9;
  StepTimes mean;
  for (const StepResult& s : results) {
    mean.stage += s.times.stage / double(results.size());
    mean.forward += s.times.forward / double(results.size());
    mean.backward += s.times.backward / double(results.size());
    mean.update += s.times.update / double(results.size());
  }
  std::string activity = "null";
  if (o.activity) {
    std::vector<ActivityRecord> recs = b->diagnostics().take_activity();
    int64_t kernels = 0, busy = 0, begin = INT64_MAX, end = INT64_MIN, reach = INT64_MIN;
    std::sort(recs.begin(), recs.end(),
              [](const auto& x, const auto& y) { return x.begin_ns < y.begin_ns; });
    for (const ActivityRecord& a : recs) {
      if (a.stream != gpu::kComputeStreamId) continue;
      ++kernels;
      begin = std::min(begin, a.begin_ns);
      end = std::max(end, a.end_ns);
      // Union of intervals in begin order.
      const int64_t from = std::max(a.begin_ns, reach);
      if (a.end_ns > from) busy += a.end_ns - from;
      reach = std::max(reach, a.end_ns);
    }
    activity = fmt::format(R"({{"compute_records":{},"busy_share":{:.4f},"records_lost":{}}})",
                           kernels, end > begin ? double(busy) / double(end - begin) : 0.0,
                           b->diagnostics().device_report().activity_lost);
  }
  fmt::print(R"({{"arch":"{}","batch":{},"size":{},"precision":"{}","layout":"{}","algo":"{}",)"
             R"("graph":{},"input":"{}","plan_s":{:.2f},"steps":{},"images_per_s":{:.1f},)"
             R"("stage_ms":{:.3f},"forward_ms":{:.3f},"backward_ms":{:.3f},"update_ms":{:.3f},)"
             R"("activity":{},"peak_in_use_mib":{},"planned_mib":{},"last_loss":{:.4f},)"
             R"("backend":"{}"}})"
             "\n",
             o.arch, o.batch, o.size, o.precision, o.layout, o.algo, o.graph,
             o.f32_input ? "f32" : "u8", plan_s, results.size(), double(o.batch) * o.steps / wall,
             mean.stage * 1e3, mean.forward * 1e3, mean.backward * 1e3, mean.update * 1e3, activity,
             b->diagnostics().device_report().peak_in_use_bytes >> 20,
             b->diagnostics().device_report().planned_bytes >> 20,
             results.empty() ? 0.0 : results.back().loss, b->describe());
  mem.release(images);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "cuda_step_driver: %s\n", e.what());
    return 1;
  }
}
