// SPDX-License-Identifier: Apache-2.0
// Fully connected layer with bias (ResNet's fc, torch's nn.Linear): out = in . weight^T +
// bias, the weight stored out-features first, as torch's state_dict has it.
#pragma once

#include <cstdint>

namespace stoker::ref {

struct LinearShape {
  int64_t n = 0;    // batch
  int64_t in = 0;   // input features
  int64_t out = 0;  // output features
};

void linear_forward(float* out,           // N x OUT
                    const float* in,      // N x IN
                    const float* weight,  // OUT x IN
                    const float* bias,    // OUT
                    const LinearShape& s);

// Writes dweight, dbias and, unless din is null, din (never accumulates).
void linear_backward(float* din,           // N x IN, or nullptr to skip
                     float* dweight,       // OUT x IN
                     float* dbias,         // OUT
                     const float* dout,    // N x OUT
                     const float* in,      // N x IN
                     const float* weight,  // OUT x IN
                     const LinearShape& s);

}  // namespace stoker::ref
