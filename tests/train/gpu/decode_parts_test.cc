// SPDX-License-Identifier: Apache-2.0
// The GPU decoder's batching, on the host: a batch cut into parts that each fit the decode
// memory, every sample in exactly one part, in order, places that never overlap, each route
// as decided; a sample too large alone goes to the CPU at its output size; re-routing a
// sample that opens a new part.
#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"
#include "train/gpu/decode/decode_parts.h"

namespace stoker::gpu {
namespace {

EncodedSample sample(int w, int h, int out, DecodedOn on = DecodedOn::gpu) {
  EncodedSample e;
  e.image_w = w;
  e.image_h = h;
  e.region = {w / 4, h / 4, w / 2, h / 2};
  e.out_w = e.out_h = out;
  e.on = on;
  return e;
}

TEST(DecodeParts, EveryPartFitsEverySampleOnceInOrderPlacesApart) {
  std::vector<EncodedSample> batch;
  for (int i = 0; i < 40; ++i)
    batch.push_back(sample(400 + 37 * i, 300 + 11 * i, 224,
                           i % 9 == 4 ? DecodedOn::progressive : DecodedOn::gpu));
  batch.push_back(sample(20000, 20000, 224));  // a 10000x10000 window: too large alone
  const size_t capacity = size_t(8) << 20;
  std::vector<DecodePart> parts;
  std::vector<size_t> k_seen;
  cut_into_parts(
      batch, capacity,
      [&](const EncodedSample& e, size_t k, DecodedPlace& place) {
        k_seen.push_back(k);
        // Every third GPU sample decoded whole (the engine refused the window), the rest alone.
        const bool whole = (e.image_w / 37) % 3 == 0;
        place = whole ? image_place(e, 0) : window_place(e, 0);
        return whole ? Route::hybrid : Route::hardware;
      },
      [&](DecodePart& p) { parts.push_back(p); });
  ASSERT_GT(parts.size(), 2u) << "8 MiB should not hold 41 windows";
  size_t next = 0;
  for (const DecodePart& p : parts) {
    EXPECT_LE(p.bytes(), capacity);
    for (size_t k = 0; k < p.index.size(); ++k) {
      EXPECT_EQ(p.index[k], next++) << "out of order";
      const EncodedSample& e = batch[p.index[k]];
      const DecodedPlace& at = p.place[k];
      if (k + 1 < p.index.size()) {
        EXPECT_LE(at.offset + int64_t(at.bytes()), p.place[k + 1].offset);
      }
      EXPECT_LE(size_t(at.offset) + at.bytes(), p.window_bytes);
      if (e.on != DecodedOn::gpu) {
        EXPECT_EQ(p.route[k], Route::loader_pixels);
        EXPECT_EQ(p.planned[k].on, e.on) << "the loader's pixels are flipped already";
      } else {
        EXPECT_EQ(p.planned[k].on, DecodedOn::gpu) << "the resize flips";
      }
    }
  }
  EXPECT_EQ(next, batch.size());
  const DecodePart& last = parts.back();
  EXPECT_EQ(last.index.back(), batch.size() - 1);
  EXPECT_EQ(last.route.back(), Route::cpu) << "too large alone: the CPU at its output size";
  EXPECT_EQ(last.place.back().w, 224);
  // A sample that opened a new part was routed again as its first (k = 0).
  EXPECT_GE(std::count(k_seen.begin(), k_seen.end(), size_t(0)), ptrdiff_t(parts.size()) - 1);
  EXPECT_THROW(cut_into_parts(
                   batch, 4096,
                   [](const EncodedSample&, size_t, DecodedPlace& p) {
                     p = DecodedPlace{};
                     return Route::hardware;
                   },
                   [](DecodePart&) {}),
               Error);
}

}  // namespace
}  // namespace stoker::gpu
