// SPDX-License-Identifier: Apache-2.0
// What storing a 224x224 f32 sample costs on this machine, apart from any resize (issue 25's
// floor): 150,528 values converted from u8 and stored into a pool of 4 x 64 samples (the
// loader's batch pool at batch 64), with plain and with non-temporal stores, and plain
// followed by XXH3-64 of the sample (the loader's sample hash). Best of 5 passes over the
// pool, ms per sample. Not a test: prints one line.
//   g++ -O2 -mavx2 -mfma bench/store_floor.cc -lxxhash -o /tmp/store_floor && /tmp/store_floor
#include <immintrin.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr size_t kValues = 3 * 224 * 224, kSamples = 4 * 64;
enum class Mode { plain, streaming, plain_and_hash };

double ms_per_sample(Mode mode, const std::vector<uint8_t>& src, float* pool) {
  const __m256 a = _mm256_set1_ps(0.0171f), b = _mm256_set1_ps(-2.1f);
  double best = 1e9;
  uint64_t h = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t s = 0; s < kSamples; ++s) {
      float* d = pool + s * kValues;
      for (size_t i = 0; i < kValues; i += 8) {
        const __m128i u8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&src[i]));
        const __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(u8)), a, b);
        if (mode == Mode::streaming) {
          _mm256_stream_ps(d + i, v);
        } else {
          _mm256_store_ps(d + i, v);
        }
      }
      if (mode == Mode::plain_and_hash) h ^= XXH3_64bits(d, kValues * sizeof(float));
    }
    const std::chrono::duration<double, std::milli> t = std::chrono::steady_clock::now() - t0;
    best = std::min(best, t.count() / kSamples);
  }
  if (h == 1) std::puts("");  // keeps the hash
  return best;
}

}  // namespace

int main() {
  std::vector<uint8_t> src(kValues);
  for (size_t i = 0; i < kValues; ++i) src[i] = static_cast<uint8_t>(i * 7);
  auto* pool = static_cast<float*>(std::aligned_alloc(64, kValues * sizeof(float) * kSamples));
  for (size_t i = 0; i < kValues * kSamples; ++i) pool[i] = 0;  // pages in before timing
  const double plain = ms_per_sample(Mode::plain, src, pool);
  const double streaming = ms_per_sample(Mode::streaming, src, pool);
  const double hashed = ms_per_sample(Mode::plain_and_hash, src, pool);
  std::printf(
      "f32 224x224 sample: plain store %.4f ms, non-temporal %.4f ms, plain + XXH3 %.4f ms\n",
      plain, streaming, hashed);
  std::free(pool);
}
