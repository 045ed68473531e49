// SPDX-License-Identifier: Apache-2.0
// Naive 2-D convolution, NCHW, fp32 buffers with double accumulation: the reference that
// the oneDNN and cuDNN convolutions are judged against. Square or not, any stride and zero
// padding, groups 1, dilation 1, no bias (ResNet's convolutions have none). Not fast.
#pragma once

#include <cstdint>

namespace stoker::ref {

struct ConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input: N x C x H x W
  int64_t k = 0;                       // output channels
  int64_t kh = 0, kw = 0;              // kernel
  int64_t stride = 1, pad = 0;         // same in both directions, as every ResNet conv

  // Output size by torch's rule (floor); checked to be at least 1.
  int64_t oh() const { return (h + 2 * pad - kh) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - kw) / stride + 1; }
};

// out[n,k,y,x] = sum over c, i, j of in[n, c, y*stride - pad + i, x*stride - pad + j] *
// weight[k,c,i,j], taps outside the image reading zero.
void conv2d_forward(float* out,           // N x K x OH x OW
                    const float* in,      // N x C x H x W
                    const float* weight,  // K x C x KH x KW
                    const ConvShape& s);

// Writes (never accumulates) dweight and, unless din is null, din. The network's first conv
// passes din = nullptr: its input is the image, whose gradient nobody needs.
void conv2d_backward(float* din,           // N x C x H x W, or nullptr to skip
                     float* dweight,       // K x C x KH x KW
                     const float* dout,    // N x K x OH x OW
                     const float* in,      // N x C x H x W
                     const float* weight,  // K x C x KH x KW
                     const ConvShape& s);

}  // namespace stoker::ref
