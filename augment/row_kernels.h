// SPDX-License-Identifier: Apache-2.0
// The row kernels that collate_sample (collate.cc) and the one-pass resize (resize_collate.cc)
// share: ToTensor + Normalize's float32 operations, (v / 255 - mean) / std element by element
// (IEEE division and subtraction, no contraction; or the checked fused multiply-add form that
// gives the same bits), written once so both paths give the same bits. Each is one plain loop
// GCC vectorises, built by STOKER_CLONES for AVX-512, AVX2 and baseline x86-64 and picked at
// load time; every clone gives the same bits.
#pragma once

#include <cstdint>

#include "augment/collate.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STOKER_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define STOKER_CLONES
#endif

namespace stoker {

// The division form, written once: what every kernel's values must equal.
inline float normalise_divide(uint8_t v, float mean, float std) {
  return (static_cast<float>(v) / 255.0f - mean) / std;
}

// The same value by products and fused multiply-add corrections (ChannelAffine's comment):
// equal to normalise_divide wherever the Normalizer set `fma` after checking all 256 values.
inline float normalise_fma(uint8_t v, const ChannelAffine& a) {
  constexpr float kInv255 = 1.0f / 255.0f;
  const float f = static_cast<float>(v);
  const float q = f * kInv255;
  const float x = __builtin_fmaf(__builtin_fmaf(-q, 255.0f, f), kInv255, q);
  const float d = x - a.mean;
  const float q2 = d * a.inv_std;
  return __builtin_fmaf(__builtin_fmaf(-q2, a.std, d), a.inv_std, q2);
}

// One plane's n values (u8) -> f32 with one channel's constants.
void normalise_plane_f32(const uint8_t* src, int n, const ChannelAffine& a, float* out);
// w interleaved RGB pixels (u8) -> interleaved f32, channel c with a[c].
void normalise_interleaved_f32(const uint8_t* src, int w, const ChannelAffine* a, float* out);

}  // namespace stoker
