// SPDX-License-Identifier: Apache-2.0
// The row kernels that collate_sample (collate.cc) and the one-pass resize (resize_collate.cc)
// share: ToTensor + Normalize's float32 operations, (v / 255 - mean) / std element by element
// (IEEE division and subtraction, no contraction), written once so both paths give the same
// bits. Each is one plain loop GCC vectorises, built by STOKER_CLONES for AVX-512, AVX2 and
// baseline x86-64 and picked at load time; every clone gives the same bits.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STOKER_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define STOKER_CLONES
#endif

namespace stoker {

// One plane's n values (u8) -> f32 with one channel's mean and std.
void normalise_plane_f32(const uint8_t* src, int n, float mean, float std, float* out);
// w interleaved RGB pixels (u8) -> interleaved f32, channel c with mean[c] and std[c].
void normalise_interleaved_f32(const uint8_t* src, int w, const float* mean, const float* std,
                               float* out);

}  // namespace stoker
