// SPDX-License-Identifier: Apache-2.0
// --decode gpu's loader half, on the host: the CPU reads, parses, plans the crop and hands
// over the bytes; it decodes only what the GPU cannot take. With libjpeg-turbo standing in
// for nvJPEG (decode_batch_on_host: the same placement and resize plan the GPU decoder runs),
// every batch must equal CPU decode's (antialiased, full resolution) bit for bit: the same
// samples in the same slots, the same crop windows and flips, the same labels, the same bad
// files replaced; the fallbacks counted by reason; whatever the reader.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <array>
#include <cstring>
#include <map>
#include <vector>

#include "augment/gpu/window_decode.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "reader_table.h"
#include "test_util.h"
#include "tools/gen/synth_image.h"

namespace stoker {
namespace {

using test::TempDir;

LoaderConfig base_config(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 6;
  c.sampler.seed = 23;
  c.sampler.shuffle = true;
  c.transform.size = 40;
  c.transform.filter = ResizeFilter::antialias;
  c.decode.allow_dct_scaling = false;
  c.prefetch = 2;
  c.warn = false;
  return c;
}

// A generated dataset plus the files the GPU cannot take (a progressive JPEG, a PNG) and one
// that nobody can (the skip policy replaces it the same way in both modes).
std::string make_mixed_dataset(const TempDir& d) {
  const std::string root = test::make_dataset(d, GenPattern::photo, 96, 3, 6);
  cv::Mat bgr = render_photo_like({120, 90, 2, 10, 5});
  cv::imwrite(root + "/class_001/progressive.jpg", bgr, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  cv::imwrite(root + "/class_002/picture.png", bgr);
  test::write_bytes(root + "/class_000/broken.jpg", std::vector<uint8_t>(300, 0x5a));
  return root;
}

struct Epoch {
  std::vector<std::vector<float>> tensors;
  std::vector<std::vector<int32_t>> labels;
  std::map<DecodedOn, int> on;
  size_t bad = 0;
};

Epoch run(const Index& index, LoaderConfig c) {
  Iterator it(index, c);
  it.start_epoch(1);
  Epoch e;
  const OutputSpec f32{DType::f32, Layout::nchw, c.transform.size, c.transform.size};
  ResizeOutput out;
  out.lut = Normalizer(f32).lut;
  while (const Batch* b = it.next()) {
    std::vector<float> t(b->size * f32.sample_bytes() / sizeof(float));
    if (c.decode_device == DecodeDevice::gpu) {
      const std::span<const EncodedSample> samples(b->encoded.data(), b->size);
      for (const EncodedSample& s : samples) ++e.on[s.on];
      decode_batch_on_host(samples, b->arena->data, static_cast<const uint8_t*>(b->data), out,
                           t.data());
    } else {
      std::memcpy(t.data(), b->data, b->bytes());
    }
    e.tensors.push_back(std::move(t));
    e.labels.emplace_back(b->labels.begin(), b->labels.begin() + long(b->size));
  }
  e.bad = it.bad_samples().count();
  return e;
}

TEST(GpuDecodeLoader, OnTheHostEqualsCpuDecodeBitForBitWhateverTheReader) {
  TempDir d;
  const Index index = open_index(make_mixed_dataset(d));
  const Epoch cpu = run(index, base_config("threads:2"));
  ASSERT_GT(cpu.tensors.size(), 2u);
  EXPECT_EQ(cpu.bad, 1u);
  // Every reader of the suite's table that runs in this process (processes:N is refused, see
  // RefusesWhatItCannotDoByName); local files: the decode device is not a source's concern.
  for (const char* reader : suite::kReaders) {
    if (parse_reader(reader).kind == ReaderSpec::Kind::processes) continue;
    for (size_t arena : {size_t(0), size_t(16) << 10}) {
      LoaderConfig c = base_config(reader);
      c.decode_device = DecodeDevice::gpu;
      c.decode_arena = arena;  // 16 KiB: room for a few samples, the rest decoded by the CPU
      const Epoch gpu = run(index, c);
      const std::string what = std::string(reader) + (arena ? ", small arena" : "");
      ASSERT_EQ(gpu.tensors.size(), cpu.tensors.size()) << what;
      for (size_t b = 0; b < cpu.tensors.size(); ++b) {
        EXPECT_EQ(gpu.labels[b], cpu.labels[b]) << what << " batch " << b;
        ASSERT_EQ(gpu.tensors[b].size(), cpu.tensors[b].size());
        EXPECT_EQ(std::memcmp(gpu.tensors[b].data(), cpu.tensors[b].data(),
                              cpu.tensors[b].size() * sizeof(float)),
                  0)
            << what << " batch " << b;
      }
      EXPECT_EQ(gpu.bad, 1u) << what;
      EXPECT_GT(gpu.on.at(DecodedOn::gpu), 0) << what;
      EXPECT_EQ(gpu.on.at(DecodedOn::progressive), 1) << what;
      EXPECT_EQ(gpu.on.at(DecodedOn::not_jpeg), 1) << what;
      if (arena) {
        EXPECT_GT(gpu.on.at(DecodedOn::arena_full), 0) << what;
      }
    }
  }
}

// A JPEG stored as RGB (Adobe APP14, transform 0; cjpeg -rgb, a real libjpeg-turbo file) is
// decoded by the CPU, counted as `rgb`: nvJPEG is not known to honour the transform and would
// then convert its channels as YCbCr (issue 41 item c).
TEST(GpuDecodeLoader, AnRgbJpegIsDecodedByTheCpu) {
  if (!test::have_tool("cjpeg")) {
    STOKER_SKIP_IF_OPTIONAL("cjpeg not installed (Debian: libjpeg-turbo-progs)");
  }
  TempDir d;
  const std::string root = test::make_dataset(d, GenPattern::photo, 64, 2, 3);
  const std::string ppm = d / "rgb.ppm";
  cv::imwrite(ppm, render_photo_like({80, 60, 2, 10, 7}));
  ASSERT_EQ(test::run("cjpeg -rgb -quality 90 -outfile " + root + "/class_001/rgb.jpg " + ppm), 0);
  const Index index = open_index(root);
  LoaderConfig c = base_config("threads:2");
  c.decode_device = DecodeDevice::gpu;
  Epoch gpu = run(index, c);
  EXPECT_EQ(gpu.bad, 0u);
  EXPECT_EQ(gpu.on[DecodedOn::rgb], 1);
  EXPECT_GT(gpu.on[DecodedOn::gpu], 0);
}

TEST(GpuDecodeLoader, RefusesWhatItCannotDoByName) {
  TempDir d;
  const Index index = open_index(test::make_dataset(d, GenPattern::photo, 64, 2, 3));
  LoaderConfig c = base_config("processes:2");
  c.decode_device = DecodeDevice::gpu;
  try {
    Iterator it(index, c);
    FAIL() << "processes:2 with --decode gpu was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a reader in this process"), std::string::npos)
        << e.what();
  }
  c = base_config("threads:2");
  c.decode_device = DecodeDevice::gpu;
  c.transform.color.brightness = 0.4;
  try {
    Iterator it(index, c);
    FAIL() << "colour jitter with --decode gpu was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("colour jitter"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker
