// SPDX-License-Identifier: Apache-2.0
// --decode gpu on a device, against an oracle we did not write: libjpeg-turbo's decode of the
// same crop windows, then the CPU path's resize (decode_batch_on_host: the loader's batches,
// the GPU decoder's placement and resize plan, libjpeg-turbo in nvJPEG's place). Real photos
// (opencv-doc) and generated ones, and a progressive JPEG (the loader's CPU decodes it),
// through the real loader with --decode gpu.
//
// The bound, per channel, on the mean absolute difference in 0..255 levels: what libjpeg-
// turbo's own decode options differ by on the same photos at full resolution. Its float IDCT
// is within 0.05 of the default (accurate integer) one; its simple chroma upsampling (what
// djpeg -nosmooth does; JPEG leaves upsampling to the decoder) within 3.3 (the largest over
// opencv-doc's photos; the median 0.8). nvJPEG's IDCT is an accurate one and its upsampling
// either kind, so it must stay within 3.5; the resize only averages differences down.
// Measured on the first GPU run and reported by the test (docs/PERFORMANCE.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>  // jpeglib.h needs FILE first

#include <jpeglib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <utility>
#include <vector>

#include "augment/decoder.h"
#include "augment/gpu/cuda/gpu_decoder.h"
#include "augment/gpu/encoded_sample.h"
#include "augment/gpu/window_decode.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "test_util.h"
#include "tests/skip_policy.h"
#include "tests/train/gpu/device_skip.h"
#include "tools/gen/gen_dataset.h"
#include "tools/gen/synth_image.h"
#include "train/gpu/device.h"

namespace stoker::gpu {
namespace {

constexpr double kMeanAbsBound = 3.5;  // levels, per channel (the header says why)
// Decode memory that cuts every batch into parts (a batch of 8 of the tree's images needs
// 1.3-4 MB) while each sample fits alone: one too large alone would go to libjpeg-turbo
// and its bits would differ from nvJPEG's.
constexpr size_t kPartsMemory = size_t(1) << 20;

// A progressive JPEG of `rgb` through libjpeg's own writer.
void write_progressive(const cv::Mat& rgb, const std::string& path) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = JDIMENSION(rgb.cols);
  c.image_height = JDIMENSION(rgb.rows);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(rgb.ptr<uint8_t>(int(c.next_scanline)));
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  test::write_bytes(path, std::vector<uint8_t>(mem, mem + size));
  jpeg_destroy_compress(&c);
  free(mem);
}

// Real photos: a fixed few of opencv-doc's (colour, 4:2:0 and 4:4:4, one progressive), each
// small enough that a sample fits the parts' decoder alone (kPartsMemory). Where the machine
// has no opencv-doc (the GPU machine starts bare), the GPU bundle's copy of them (data/photos
// beside tests/; scripts/gpu_bundle.sh), or $STOKER_TEST_PHOTOS.
constexpr const char* kPhotos[] = {"HappyFish.jpg", "butterfly.jpg",    "home.jpg",
                                   "messi5.jpg",    "squirrel_cls.jpg", "Blender_Suzanne1.jpg"};
std::filesystem::path photo_dir() {
  if (const char* env = std::getenv("STOKER_TEST_PHOTOS")) return env;
  const std::filesystem::path doc = "/usr/share/doc/opencv-doc/examples/data";
  if (std::filesystem::exists(doc / kPhotos[0])) return doc;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "../data/photos";
}

// An ImageFolder tree of real photos where they are found, generated ones and one progressive
// JPEG (the loader's CPU decodes it). Returns the root and the number of progressive files
// in it (from their headers: which photos are progressive is theirs to say).
std::pair<std::string, size_t> make_tree(const test::TempDir& d) {
  GenConfig g;
  g.out = d / "data";
  g.sizes = {200};
  g.classes = 2;
  g.per_class = 10;
  g.progress = false;
  const std::string root = generate_dataset(g).roots.at(0);
  const std::filesystem::path photos = photo_dir();
  int n = 0;
  for (const char* name : kPhotos)
    if (std::filesystem::exists(photos / name))
      std::filesystem::copy_file(photos / name,
                                 root + fmt::format("/class_00{}/{}", n++ % 2, name));
  std::printf("# real photos: %d of %zu from %s\n", n, std::size(kPhotos), photos.c_str());
  write_progressive(render_photo_like({300, 200, 2, 10, 9}), root + "/class_000/progressive.jpg");
  size_t progressive = 0;
  Decoder probe;
  for (const auto& f : std::filesystem::recursive_directory_iterator(root))
    if (f.path().extension() == ".jpg") {
      const std::vector<uint8_t> bytes = test::read_bytes(f.path().string());
      progressive +=
          gpu_decode_refusal(probe.open(bytes, f.path().string())) == DecodedOn::progressive;
    }
  return {root, progressive};
}

LoaderConfig gpu_config(int size) {
  LoaderConfig c;
  c.reader = parse_reader("threads:2");
  c.sampler.batch_size = 8;
  c.sampler.seed = 5;
  c.sampler.shuffle = true;
  c.transform.size = size;
  c.decode_device = DecodeDevice::gpu;
  c.warn = false;
  return c;
}

// Device tensor of n floats or halves, copied back as floats.
std::vector<float> to_host(const void* dev, size_t n, DType t) {
  std::vector<float> out(n);
  if (t == DType::f32) {
    cudaMemcpy(out.data(), dev, n * 4, cudaMemcpyDeviceToHost);
    return out;
  }
  std::vector<uint16_t> raw(n);
  cudaMemcpy(raw.data(), dev, n * 2, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::f16) {
      __half_raw h;
      h.x = raw[i];
      out[i] = __half2float(__half(h));
    } else {
      __nv_bfloat16_raw b;
      b.x = raw[i];
      out[i] = __bfloat162float(__nv_bfloat16(b));
    }
  }
  return out;
}

TEST(GpuDecode, MatchesLibjpegTurboThenTheCpuResizeWithinTheDecodersSpread) {
  SKIP_WITHOUT_DEVICE();
  test::TempDir d;
  const auto [root, progressive] = make_tree(d);
  const Index index = open_index(root);
  for (int size : {224, 96}) {
    const LoaderConfig c = gpu_config(size);
    Iterator it(index, c);
    it.start_epoch(0);
    ResizeOutput out;
    OutputSpec f32{DType::f32, Layout::nchw, size, size};
    out.lut = Normalizer(f32).lut;
    GpuDecoder big({0, size_t(1) << 30, true}), small({0, kPartsMemory, true});
    double worst = 0, sum = 0;
    size_t batches = 0;
    void* dev = nullptr;
    const size_t n = size_t(c.sampler.batch_size) * 3 * size * size;
    ASSERT_EQ(cudaMalloc(&dev, n * 4), cudaSuccess);
    while (const Batch* b = it.next()) {
      const std::span<const EncodedSample> s(b->encoded.data(), b->size);
      const auto* pixels = static_cast<const uint8_t*>(b->data);
      std::vector<float> want(b->size * 3 * size * size);
      decode_batch_on_host(s, b->arena->data, pixels, out, want.data());
      EXPECT_TRUE(big.decode(s, b->arena->data, pixels, out, dev, nullptr).empty());
      cudaDeviceSynchronize();
      const std::vector<float> got = to_host(dev, want.size(), DType::f32);
      // Per sample and channel, in levels: the normalised difference times std x 255.
      for (size_t i = 0; i < b->size; ++i)
        for (int ch = 0; ch < 3; ++ch) {
          double a = 0;
          const size_t at = (i * 3 + size_t(ch)) * size_t(size * size);
          for (size_t p = 0; p < size_t(size * size); ++p)
            a += std::abs(double(got[at + p]) - double(want[at + p]));
          a = a / double(size * size) * double(f32.std[size_t(ch)]) * 255.0;
          worst = std::max(worst, a);
          sum += a;
          EXPECT_LE(a, kMeanAbsBound) << "sample " << b->indices[i] << " channel " << ch;
        }
      // Decoded in parts under a small decode memory: the same bits. In f16 / bf16 NHWC: the
      // f32 values rounded, laid out as NHWC.
      EXPECT_TRUE(small.decode(s, b->arena->data, pixels, out, dev, nullptr).empty());
      cudaDeviceSynchronize();
      EXPECT_EQ(to_host(dev, want.size(), DType::f32), got);
      for (DType t : {DType::f16, DType::bf16}) {
        ResizeOutput o = out;
        o.dtype = t;
        o.layout = Layout::nhwc;
        big.decode(s, b->arena->data, pixels, o, dev, nullptr);
        cudaDeviceSynchronize();
        const std::vector<float> h = to_host(dev, want.size(), t);
        for (size_t i = 0; i < b->size; ++i)
          for (int y = 0; y < size; y += 7)
            for (int x = 0; x < size; x += 5)
              for (int ch = 0; ch < 3; ++ch) {
                const float v =
                    got[((i * 3 + size_t(ch)) * size_t(size) + size_t(y)) * size_t(size) +
                        size_t(x)];
                const float r = t == DType::f16 ? __half2float(__float2half_rn(v))
                                                : __bfloat162float(__float2bfloat16_rn(v));
                ASSERT_EQ(
                    h[((i * size_t(size) + size_t(y)) * size_t(size) + size_t(x)) * 3 + size_t(ch)],
                    r);
              }
      }
      ++batches;
    }
    cudaFree(dev);
    const GpuDecodeCounts& k = big.counts();
    EXPECT_GT(k.hardware + k.hybrid, 0u);
    if (big.describe().find("hardware engine") != std::string::npos) {
      EXPECT_GT(k.hardware, 0u) << "an engine that decoded nothing";
    }
    // Three passes of every batch (f32, f16, bf16), each progressive file once a pass.
    EXPECT_EQ(k.loader_cpu[size_t(DecodedOn::progressive)], 3 * progressive);
    EXPECT_GT(small.counts().parts, small.counts().batches) << "no batch was cut into parts";
    EXPECT_EQ(small.counts().engine_cpu, k.engine_cpu / 3)
        << "a sample too large for the parts' memory alone went to libjpeg-turbo";
    std::printf(
        "# gpu decode %d px: %s; mean abs difference per channel %.3f levels (worst %.3f, "
        "bound %.1f) over %zu batches; hardware %llu hybrid %llu whole %llu cpu %llu; in parts "
        "of %zu bytes: %llu parts for %llu batches\n",
        size, big.describe().c_str(), sum / double(3 * index.size()), worst, kMeanAbsBound, batches,
        (unsigned long long)k.hardware, (unsigned long long)k.hybrid,
        (unsigned long long)k.whole_image, (unsigned long long)k.engine_cpu, kPartsMemory,
        (unsigned long long)small.counts().parts, (unsigned long long)small.counts().batches);
  }
}

// A JPEG cut inside its scan with an end marker appended passes the loader's header checks
// (it has an EOI), and libjpeg-turbo refuses it (its warning is an error on the CPU path). GPU
// decode must refuse it too, not train on what nvJPEG makes of the missing data (issue 41 b:
// NVJPEG_FLAGS_BITSTREAM_STRICT).
TEST(GpuDecode, AFileCutInsideItsScanIsRefusedAsOnTheCpu) {
  SKIP_WITHOUT_DEVICE();
  test::TempDir d;
  GenConfig g;
  g.out = d / "data";
  g.sizes = {256};
  g.classes = 1;
  g.per_class = 1;
  g.progress = false;
  const Index index = open_index(generate_dataset(g).roots.at(0));
  std::vector<uint8_t> bytes = test::read_bytes(index.path(0));
  Decoder cpu;
  const ImageInfo info = cpu.open(bytes, "whole");
  bytes.resize(bytes.size() * 2 / 3);  // inside the scan: the headers are a few hundred bytes
  bytes.push_back(0xFF);
  bytes.push_back(0xD9);
  EncodedSample e;
  e.length = uint32_t(bytes.size());
  e.image_w = info.width;
  e.image_h = info.height;
  e.region = {0, 0, info.width, info.height};
  e.out_w = e.out_h = 64;
  const auto on_cpu = [&] {
    cpu.open(bytes, "cut");
    cpu.decode(DecodeRequest{e.region, 64, 64});
  };
  ASSERT_THROW(on_cpu(), Error) << "libjpeg-turbo accepted the cut file: the test's premise";
  ResizeOutput out;
  out.lut = Normalizer(OutputSpec{DType::f32, Layout::nchw, 64, 64}).lut;
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 3 * 64 * 64 * 4), cudaSuccess);
  GpuDecoder decoder({0, size_t(64) << 20, true});
  const std::vector<size_t> failed =
      decoder.decode({&e, 1}, bytes.data(), nullptr, out, dev, nullptr);
  cudaDeviceSynchronize();
  cudaFree(dev);
  const GpuDecodeCounts& k = decoder.counts();
  std::printf("# cut file: %s; hardware %llu hybrid %llu cpu %llu failed %llu\n",
              decoder.describe().c_str(), (unsigned long long)k.hardware,
              (unsigned long long)k.hybrid, (unsigned long long)k.engine_cpu,
              (unsigned long long)k.failed);
  EXPECT_EQ(failed, std::vector<size_t>{0}) << "decoded on the GPU: nvJPEG is not strict";
}

}  // namespace
}  // namespace stoker::gpu
