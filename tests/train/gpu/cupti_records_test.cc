// SPDX-License-Identifier: Apache-2.0
// CUPTI activity records to ActivityRecords without a GPU: records built by hand in CUPTI's
// own structs (kernel, memcpy, memset, and kinds that are ignored), the clock offset, the
// stream mapping, and kernel names demangled by the C++ runtime and shortened.
#include "train/gpu/cupti_records.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/clock.h"

namespace stoker::gpu {
namespace {

RecordContext context() {
  RecordContext c;
  c.clock = calibrate(1'000'000, 40'000, 1'000'100);  // steady = cupti + 960'050
  c.compute_stream = 7;
  c.copy_stream = 13;
  return c;
}

TEST(Calibrate, MidpointOfTheSteadyWindow) {
  const ClockOffset o = calibrate(1'000'000, 40'000, 1'000'100);
  EXPECT_EQ(o.offset_ns, 1'000'050 - 40'000);
  EXPECT_EQ(o.uncertainty_ns, 50);
}

// The timestamp callback CUPTI is given (cuptiActivityRegisterTimestampCallback) is the steady
// clock the loop's windows use, not CLOCK_REALTIME: read between two steady reads, and it
// never goes back.
TEST(CuptiTimestamp, IsTheSteadyClock) {
  for (int i = 0; i < 1000; ++i) {
    const int64_t before = now_ns();
    const uint64_t t = cupti_steady_timestamp();
    const int64_t after = now_ns();
    ASSERT_LE(before, int64_t(t));
    ASSERT_LE(int64_t(t), after);
  }
}

// Which records count as lost when they arrive without timestamps.
TEST(IntervalKinds, KernelsCopiesAndSetsOnly) {
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                               CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET})
    EXPECT_TRUE(is_interval_kind(k)) << int(k);
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER})
    EXPECT_FALSE(is_interval_kind(k)) << int(k);
}

TEST(MapStream, ComputeCopyOther) {
  const RecordContext c = context();
  EXPECT_EQ(map_stream(c, 7), kComputeStreamId);
  EXPECT_EQ(map_stream(c, 13), kCopyStreamId);
  EXPECT_EQ(map_stream(c, 8), kOtherStreamId);
}

TEST(ShortKernelName, DemanglesAndDropsTemplatesAndParameters) {
  EXPECT_EQ(short_kernel_name("_ZN5cudnn3cnn10conv_fpropIfLi3EEEvPKfS3_Pfi"),
            "cudnn::cnn::conv_fprop");
  EXPECT_EQ(short_kernel_name("void stoker::gpu::(anonymous namespace)::sgd_kernel(const "
                              "stoker::gpu::TensorSlot*, bool)"),
            "stoker::gpu::::sgd_kernel");
  EXPECT_EQ(short_kernel_name("sm90_xmma_gemm_f16f16_f32"), "sm90_xmma_gemm_f16f16_f32");
  EXPECT_EQ(short_kernel_name("_Znot_really_mangled"), "_Znot_really_mangled");
  EXPECT_EQ(short_kernel_name(std::string(300, 'k')).size(), 96u);
}

TEST(ConvertRecord, KernelOnTheComputeStream) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 50'000;
  k.end = 52'500;
  k.streamId = 7;
  k.name = "_ZN5cudnn3cnn10conv_fpropIfLi3EEEvPKfS3_Pfi";
  const auto r = convert_record(reinterpret_cast<const CUpti_Activity&>(k), context());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->kind, ActivityRecord::Kind::kernel);
  EXPECT_EQ(r->begin_ns, 50'000 + 960'050);
  EXPECT_EQ(r->end_ns, 52'500 + 960'050);
  EXPECT_EQ(r->stream, kComputeStreamId);
  EXPECT_EQ(r->name, "cudnn::cnn::conv_fprop");
  EXPECT_EQ(r->step, -1);
}

TEST(ConvertRecord, MemcpyOnTheCopyStreamAndMemset) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 150528;
  m.start = 10;
  m.end = 20;
  m.streamId = 13;
  const auto r = convert_record(reinterpret_cast<const CUpti_Activity&>(m), context());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->kind, ActivityRecord::Kind::memcpy);
  EXPECT_EQ(r->stream, kCopyStreamId);
  EXPECT_EQ(r->name, "memcpy HtoD 150528 B");
  EXPECT_EQ(r->end_ns - r->begin_ns, 10);

  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4;
  s.start = 100;
  s.end = 101;
  s.streamId = 99;
  const auto t = convert_record(reinterpret_cast<const CUpti_Activity&>(s), context());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->kind, ActivityRecord::Kind::memset);
  EXPECT_EQ(t->stream, kOtherStreamId);
  EXPECT_EQ(t->name, "memset 4 B");
}

TEST(ConvertRecord, IgnoresOtherKindsAndIncompleteRecords) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  k.start = 1;
  k.end = 2;
  EXPECT_FALSE(convert_record(reinterpret_cast<const CUpti_Activity&>(k), context()));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 0;  // CUPTI leaves 0 when it could not time the kernel
  EXPECT_FALSE(convert_record(reinterpret_cast<const CUpti_Activity&>(k), context()));
  k.start = 5;
  k.end = 4;
  EXPECT_FALSE(convert_record(reinterpret_cast<const CUpti_Activity&>(k), context()));
  k.end = 5;
  k.name = nullptr;
  const auto r = convert_record(reinterpret_cast<const CUpti_Activity&>(k), context());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "?");
}

TEST(AssignSteps, MarkersStartSteps) {
  const auto rec = [](std::string name, int64_t begin, uint32_t stream = kComputeStreamId) {
    ActivityRecord r;
    r.name = std::move(name);
    r.begin_ns = begin;
    r.end_ns = begin + 1;
    r.stream = stream;
    return r;
  };
  std::vector<ActivityRecord> rs = {rec("before", 0),
                                    rec(std::string(kStepMarkerName), 10),
                                    rec("conv", 11),
                                    rec("memcpy", 12, kCopyStreamId),
                                    rec(std::string(kStepMarkerName), 20),
                                    rec("sgd", 21),
                                    rec(std::string(kStepMarkerName), 30),
                                    rec("unlabelled", 31)};
  EXPECT_EQ(assign_steps(rs, {7, 8}), 2u);
  const std::vector<int64_t> steps = {-1, 7, 7, 7, 8, 8, -1, -1};
  for (size_t i = 0; i < rs.size(); ++i) EXPECT_EQ(rs[i].step, steps[i]) << rs[i].name;
}

TEST(ShortKernelName, TheStepMarkerAsCuptiNamesIt) {
  EXPECT_EQ(short_kernel_name("_ZN6stoker3gpu18stoker_step_markerEv"), kStepMarkerName);
}

}  // namespace
}  // namespace stoker::gpu
