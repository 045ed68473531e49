// SPDX-License-Identifier: Apache-2.0
// ReLU and the residual add: element-wise layers over any tensor, seen as n floats. Both
// may run in place, as a backend will run them; the backward of ReLU reads the output, not
// the input, so the input buffer need not survive an in-place forward.
#pragma once

#include <cstdint>

namespace stoker::ref {

// out = max(in, 0); out may alias in.
void relu_forward(float* out,       // n
                  const float* in,  // n
                  int64_t n);

// din = dout where out > 0, else 0 (torch's choice at 0: the gradient there is 0).
// din may alias dout.
void relu_backward(float* din,         // n
                   const float* dout,  // n
                   const float* out,   // n, relu_forward's output
                   int64_t n);

// out = a + b (the residual branch plus the shortcut); out may alias a or b.
void add_forward(float* out,      // n
                 const float* a,  // n
                 const float* b,  // n
                 int64_t n);

// da = db = dout: an add passes its gradient to both inputs unchanged. Either may alias dout.
void add_backward(float* da,          // n
                  float* db,          // n
                  const float* dout,  // n
                  int64_t n);

}  // namespace stoker::ref
