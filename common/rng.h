// SPDX-License-Identifier: Apache-2.0
// Counter-based randomness: every random choice in Stoker is a pure function of
// (seed, epoch, sample index, stream), so results do not depend on worker count or order.
// Integer ranges use our own unbiased mapping, never std::*_distribution (whose output
// differs between standard libraries).
#pragma once

#include <cmath>
#include <cstdint>

namespace stoker {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Mixes several words into one well-distributed 64-bit key.
inline uint64_t hash_key(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  uint64_t s = a;
  uint64_t h = splitmix64(s);
  s = h ^ b;
  h = splitmix64(s);
  s = h ^ c;
  h = splitmix64(s);
  s = h ^ d;
  return splitmix64(s);
}

// xoshiro256** seeded from a key; small, fast and good enough for augmentation choices.
class Rng {
 public:
  explicit Rng(uint64_t key) {
    for (auto& w : s_) w = splitmix64(key);
  }
  Rng(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t stream = 0)
      : Rng(hash_key(seed, epoch, index, stream)) {}

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    if (n <= 1) return 0;
    __uint128_t m = static_cast<__uint128_t>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<__uint128_t>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform integer in [lo, hi) (Python's randint(lo, hi - 1)).
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo)));
  }
  bool bernoulli(double p) { return uniform() < p; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace stoker
