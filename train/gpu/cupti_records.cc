// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cupti_records.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>

#include "common/clock.h"

namespace stoker::gpu {
namespace {

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string_view memcpy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "other";
  }
}

}  // namespace

ClockOffset calibrate(int64_t steady_before, uint64_t cupti_ns, int64_t steady_after) {
  const int64_t mid = steady_before + (steady_after - steady_before) / 2;
  return {mid - int64_t(cupti_ns), (steady_after - steady_before + 1) / 2};
}

uint64_t cupti_steady_timestamp() {
  return uint64_t(now_ns());
}

bool is_interval_kind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
         kind == CUPTI_ACTIVITY_KIND_MEMCPY || kind == CUPTI_ACTIVITY_KIND_MEMSET;
}

uint32_t map_stream(const RecordContext& ctx, uint32_t cupti_stream) {
  if (cupti_stream == ctx.compute_stream) return kComputeStreamId;
  if (cupti_stream == ctx.copy_stream) return kCopyStreamId;
  return kOtherStreamId;
}

std::string short_kernel_name(std::string_view raw) {
  const std::string full = demangle(raw);
  // Drop template arguments and the parameter list (anything inside <> or ()), keeping the
  // last space-separated word at depth 0: that is the qualified name after the return type.
  std::string out;
  int depth = 0;
  for (char ch : full) {
    if (ch == '<' || ch == '(') {
      ++depth;
      continue;
    }
    if (ch == '>' || ch == ')') {
      if (depth > 0) --depth;
      continue;
    }
    if (depth > 0) continue;
    if (ch == ' ') {
      out.clear();  // what came before was the return type (or a qualifier)
      continue;
    }
    out += ch;
  }
  if (out.empty()) out = full;
  if (out.size() > 96) out.resize(96);
  return out;
}

std::optional<ActivityRecord> convert_record(const CUpti_Activity& record,
                                             const RecordContext& ctx) {
  ActivityRecord r;
  uint64_t start = 0, end = 0;
  uint32_t stream = 0;
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      r.kind = ActivityRecord::Kind::kernel;
      start = k.start, end = k.end, stream = k.streamId;
      r.name = short_kernel_name(k.name ? std::string_view(k.name) : std::string_view("?"));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      r.kind = ActivityRecord::Kind::memcpy;
      start = m.start, end = m.end, stream = m.streamId;
      r.name = fmt::format("memcpy {} {} B", memcpy_kind_name(m.copyKind), m.bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      r.kind = ActivityRecord::Kind::memset;
      start = m.start, end = m.end, stream = m.streamId;
      r.name = fmt::format("memset {} B", m.bytes);
      break;
    }
    default:
      return std::nullopt;
  }
  if (end < start || start == 0) return std::nullopt;  // incomplete record (CUPTI writes 0)
  r.begin_ns = int64_t(start) + ctx.clock.offset_ns;
  r.end_ns = int64_t(end) + ctx.clock.offset_ns;
  r.stream = map_stream(ctx, stream);
  return r;
}

size_t assign_steps(std::vector<ActivityRecord>& sorted, const std::vector<int64_t>& marker_steps) {
  return label_steps_by_markers(sorted, kStepMarkerName, marker_steps);
}

}  // namespace stoker::gpu
