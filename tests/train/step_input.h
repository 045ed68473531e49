// SPDX-License-Identifier: Apache-2.0
// The input of a conformance row (backend_conformance_test), shared with conformance_case_driver,
// which hands the same images to conformance_bounds.py. Apart from backend_cases.h because the
// u8 case normalises with the loader's table (augment/collate.h, which needs OpenCV's headers).
#pragma once

#include <cstdint>
#include <vector>

#include "augment/collate.h"
#include "models/normal.h"
#include "tests/train/backend_cases.h"
#include "train/backend.h"

namespace stoker::test {

// The images of a case: `reference` in NCHW f32 (u8 through the loader's own normalisation
// table), `given` what the backend is handed, in the case's type and layout.
struct StepInput {
  std::vector<float> reference, f32_nhwc;
  std::vector<uint8_t> pixels, pixels_nhwc;
  std::vector<int32_t> labels;
  const void* given = nullptr;
};

inline void make_input(int64_t batch, int64_t size, DType type, bool nhwc, StepInput& in) {
  const size_t n = size_t(batch * 3 * size * size);
  in.reference.resize(n);
  Rng rng(7);
  if (type == DType::u8) {
    in.pixels.resize(n);
    OutputSpec spec;
    const Normalizer norm(spec);
    const size_t hw = size_t(size * size);
    for (size_t i = 0; i < n; ++i) {
      in.pixels[i] = uint8_t(rng.next() >> 56);
      in.reference[i] = norm.lut[(i / hw) % 3][in.pixels[i]];
    }
    if (nhwc) in.pixels_nhwc = nchw_to_nhwc(in.pixels, batch, 3, size, size);
    in.given = nhwc ? in.pixels_nhwc.data() : in.pixels.data();
  } else {
    fill_normal(rng, 1.0, in.reference);
    if (nhwc) in.f32_nhwc = nchw_to_nhwc(in.reference, batch, 3, size, size);
    in.given = nhwc ? in.f32_nhwc.data() : in.reference.data();
  }
  for (int64_t i = 0; i < batch; ++i) in.labels.push_back(int32_t((i * 7 + 3) % 10));
}

}  // namespace stoker::test
