// SPDX-License-Identifier: Apache-2.0
// Max pooling (any window, stride and padding, floor mode) and global average pooling,
// NCHW. Max pooling keeps the argmax of every window, as torch and oneDNN's workspace do,
// so the backward routes each gradient to exactly the element the forward chose.
#pragma once

#include <cstdint>

namespace stoker::ref {

struct PoolShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input: N x C x H x W
  int64_t k = 3, stride = 2, pad = 1;  // ResNet's stem pool by default

  int64_t oh() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / stride + 1; }
};

// out = the max of each window over the real (unpadded) elements; argmax = its index in
// the H x W plane. Ties go to the first maximum in row-major scan order and a NaN wins, as
// in torch's CPU kernel. Needs pad <= k / 2 (torch's rule), so no window is all padding.
void maxpool2d_forward(float* out,       // N x C x OH x OW
                       int64_t* argmax,  // N x C x OH x OW, index into the H x W plane
                       const float* in,  // N x C x H x W
                       const PoolShape& s);

// din = 0, then each dout added at its window's argmax (overlapping windows may pick the
// same element, whose gradient is then the sum).
void maxpool2d_backward(float* din,             // N x C x H x W
                        const float* dout,      // N x C x OH x OW
                        const int64_t* argmax,  // N x C x OH x OW, from the forward
                        const PoolShape& s);

// out[n,c] = mean over H x W of in[n,c]: ResNet's avgpool followed by flatten.
void global_avgpool_forward(float* out,       // N x C
                            const float* in,  // N x C x H x W
                            int64_t n, int64_t c, int64_t h, int64_t w);

// din[n,c,y,x] = dout[n,c] / (H * W).
void global_avgpool_backward(float* din,         // N x C x H x W
                             const float* dout,  // N x C
                             int64_t n, int64_t c, int64_t h, int64_t w);

}  // namespace stoker::ref
