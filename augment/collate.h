// SPDX-License-Identifier: Apache-2.0
// The last stage of a sample: write the resized RGB image into its place in the batch
// tensor, flipped if asked, as uint8 or as float32 normalised like torchvision's
// ToTensor + Normalize (bit-identical: the same float32 operations element by element, or a
// form checked to give the same bits for every value, in vectorised row loops).
#pragma once

#include <opencv2/core.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "augment/imagenet.h"
#include "common/dtype.h"

namespace stoker {

// The loader's output words: u8 or f32 (common/dtype.h), nchw or nhwc.
DType parse_dtype(const std::string& s);
Layout parse_layout(const std::string& s);

struct OutputSpec {
  DType dtype = DType::f32;
  Layout layout = Layout::nchw;
  int width = 224, height = 224;
  std::array<float, 3> mean = kImagenetMean;  // on the 0..1 scale, as torchvision
  std::array<float, 3> std = kImagenetStd;

  size_t element_bytes() const { return dtype_bytes(dtype); }
  size_t sample_bytes() const { return size_t(3) * width * height * element_bytes(); }
};

// One channel's ToTensor + Normalize for the vectorised row kernels (row_kernels.h).
// (v / 255 - mean) / std costs two IEEE divisions per value, the f32 output's largest cost
// after the decode. Each division is also the correctly rounded quotient that a product by
// the rounded reciprocal gives after one fused multiply-add correction step (Markstein's);
// `fma` says that this form was checked to give every one of the 256 values' bits here.
struct ChannelAffine {
  float mean = 0, std = 1, inv_std = 1;
  bool fma = false;
};

// The output spec, and its f32 values as per-channel tables for code that normalises one
// value at a time (a backend's u8 input path and its tests); collate computes the same
// values with the same float32 operations in vectorised loops.
struct Normalizer {
  explicit Normalizer(const OutputSpec& spec);
  OutputSpec spec;
  std::array<std::array<float, 256>, 3> lut;
  std::array<ChannelAffine, 3> affine;
};

// rgb: h x w x 3 uint8 (spec.height x spec.width, or a batch's own size when the loader's
// size changes over a run). dst: one sample's place in the batch tensor, [3, h, w] (nchw) or
// [h, w, 3] (nhwc), of spec.dtype.
void collate_sample(const cv::Mat& rgb, bool flip, const Normalizer& norm, void* dst);

}  // namespace stoker
