// SPDX-License-Identifier: Apache-2.0
#include "tools/train/decode_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "augment/decoder.h"
#include "common/error.h"
#include "train/gpu_decode.h"

namespace stoker {
namespace {

constexpr int kAutoAbovePx = 512;

// Why GPU decode does not go with this run's other options, or empty. The backend must take
// batches from the device (its caps' device_input); its name only goes into the message.
std::string why_not_with(const LoaderConfig& lc, std::string_view backend,
                         const BackendCaps& caps) {
  if (!caps.device_input)
    return fmt::format("the {} backend {} (GPU decode feeds --backend cuda)", backend,
                       caps.device ? "takes no batches from the device" : "trains on the CPU");
  if (lc.reader.kind == ReaderSpec::Kind::processes)
    return fmt::format("reader {} decodes in other processes", lc.reader.text());
  if (lc.transform.color.any()) return "colour jitter and grayscale run on the CPU only";
  return {};
}

// The first bytes of sample i (its header), or empty where they cannot be read here.
std::vector<uint8_t> head_bytes(const Index& index, size_t i) {
  constexpr uint64_t kHead = uint64_t(1) << 20;  // EXIF thumbnails can push SOF far in
  std::string scratch;
  const SampleLocation at = locate_sample(index, i, scratch);
  if (at.file.find("://") != std::string_view::npos) return {};
  std::ifstream f{std::string(at.file), std::ios::binary};
  if (!f) return {};
  f.seekg(std::streamoff(at.offset));
  std::vector<uint8_t> bytes(size_t(at.whole_file() ? kHead : std::min(kHead, at.length)));
  f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
  bytes.resize(size_t(f.gcount()));
  return bytes;
}

}  // namespace

int stored_image_side(const Index& index, int samples) {
  const size_t n = index.size();
  const size_t take = std::min(n, size_t(std::max(samples, 1)));
  std::vector<int> sides;
  Decoder decoder;
  for (size_t j = 0; j < take; ++j) {
    const size_t i = take == 1 ? 0 : j * (n - 1) / (take - 1);
    const std::vector<uint8_t> bytes = head_bytes(index, i);
    if (bytes.empty()) continue;
    try {
      const ImageInfo info = decoder.open(bytes, index.path(i));
      if (info.width > 0 && info.height > 0) sides.push_back(std::max(info.width, info.height));
    } catch (const Error&) {
      // Not an image, or its header is past what was read: another sample decides.
    }
  }
  if (sides.empty()) return 0;
  std::nth_element(sides.begin(), sides.begin() + ptrdiff_t(sides.size() / 2), sides.end());
  return sides[sides.size() / 2];
}

DecodeChoice choose_decode(DecodeMode mode, const LoaderConfig& lc, std::string_view backend,
                           const BackendCaps& caps, int stored_side) {
  if (mode == DecodeMode::cpu) return {DecodeDevice::cpu, "--decode cpu"};
  if (mode == DecodeMode::gpu) {
    if (const std::string why = why_not_with(lc, backend, caps); !why.empty())
      usage_fail("--decode gpu: {}: add --backend cuda, or use --decode cpu", why);
    if (const std::string why = gpu_decode_unavailable(); !why.empty())
      fail("--decode gpu: {}", why);
    return {DecodeDevice::gpu, "--decode gpu"};
  }
  // The other options first: with the CPU backend the images' size is beside the point.
  if (const std::string why = why_not_with(lc, backend, caps); !why.empty())
    return {DecodeDevice::cpu, fmt::format("auto: {}", why)};
  if (stored_side <= 0)
    return {DecodeDevice::cpu, "auto: the stored images' size could not be read"};
  if (stored_side <= kAutoAbovePx)
    return {DecodeDevice::cpu,
            fmt::format("auto: {} px stored images, where the CPU keeps up (GPU above {})",
                        stored_side, kAutoAbovePx)};
  if (const std::string why = gpu_decode_unavailable(); !why.empty())
    return {DecodeDevice::cpu, fmt::format("auto: {} px stored images, but {}", stored_side, why)};
  return {DecodeDevice::gpu,
          fmt::format("auto: {} px stored images > {}", stored_side, kAutoAbovePx)};
}

}  // namespace stoker
