// SPDX-License-Identifier: Apache-2.0
// The null source, as fio's null engine: no I/O, every sample is the same bytes (a built-in
// JPEG, or one file read once), so a run measures the loader's own overhead plus decode.
// Synchronous and asynchronous: submit completes at once, reap returns what was submitted.
#include <cstring>
#include <deque>

#include "augment/encode_jpeg.h"
#include "common/clock.h"
#include "common/error.h"
#include "loader/sources/source.h"

namespace stoker {

std::span<const uint8_t> null_source_jpeg() {
  static const std::vector<uint8_t> jpeg = [] {
    // A smooth colour gradient: decodes like a photo, compresses like one (about 10 KB).
    // (Blue x, green y, red (x+y)/2: the bytes it had when OpenCV encoded it from BGR.)
    constexpr int kSide = 256;
    std::vector<uint8_t> rgb(kSide * kSide * 3);
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        uint8_t* p = &rgb[(static_cast<size_t>(y) * kSide + x) * 3];
        p[0] = static_cast<uint8_t>((x + y) / 2);
        p[1] = static_cast<uint8_t>(y);
        p[2] = static_cast<uint8_t>(x);
      }
    }
    return encode_jpeg_rgb(rgb.data(), kSide, kSide, kSide * 3, 90);
  }();
  return jpeg;
}

namespace {

class NullSource final : public Source {
 public:
  NullSource(const SourceOptions& o, uint32_t depth) : options_(o), depth_(depth ? depth : 64) {
    if (o.null_file.empty()) {
      bytes_ = null_source_jpeg();
    } else {
      read_file(o.null_file, own_);
      bytes_ = own_;
    }
  }
  const char* name() const override { return "null"; }
  uint32_t capabilities() const override { return kAsync; }
  std::unique_ptr<Source> clone() const override {
    return std::make_unique<NullSource>(options_, depth_);
  }
  std::span<const uint8_t> read(const SampleLocation&, ReadBuffer&) override { return bytes_; }
  size_t queue_depth() const override { return depth_; }
  void submit(const ReadRequest& r) override {
    r.buffer->reserve(bytes_.size());
    std::memcpy(r.buffer->data(), bytes_.data(), bytes_.size());
    done_.push_back({r.tag, bytes_.size(), 0, {}});
  }
  size_t reap(std::vector<ReadCompletion>& out, size_t max, int) override {
    return take_completions(done_, out, max);
  }

 private:
  SourceOptions options_;
  uint32_t depth_;
  std::vector<uint8_t> own_;
  std::span<const uint8_t> bytes_;
  std::deque<ReadCompletion> done_;
};

}  // namespace

std::unique_ptr<Source> make_null_source(const SourceOptions& options, uint32_t queue_depth) {
  return std::make_unique<NullSource>(options, queue_depth);
}

}  // namespace stoker
