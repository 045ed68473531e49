// SPDX-License-Identifier: Apache-2.0
// The GPU decoder's batching, on the host: a batch cut into parts that each fit the decode
// memory, every sample in exactly one part, in order, places that never overlap, each route
// as decided; a sample too large alone goes to the CPU at its output size; re-routing a
// sample that opens a new part.
#include <gtest/gtest.h>

#include <iterator>
#include <vector>

#include "augment/gpu/decode_parts.h"
#include "common/error.h"

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

// After the engine fails a part's batch, every one of its samples is still decoded: the
// hybrid backend where it parses, else libjpeg-turbo into its place (issue 41: a sample that
// took Route::cpu there was never decoded, and trained on stale bytes). A hybrid sample that
// nvJPEG refuses late goes the same way; one libjpeg-turbo refuses too is bad.
TEST(DecodeParts, ASampleTheEngineFailedIsDecodedSomewhere) {
  DecodePart part;
  const EncodedSample e = sample(640, 480, 224);
  const Route routes[] = {Route::loader_pixels, Route::hardware, Route::hardware, Route::hardware,
                          Route::cpu};
  for (size_t i = 0; i < std::size(routes); ++i)
    add_to_part(part, i, routes[i], image_place(e, 0), e);
  // The engine failed the batch: samples 1 and 3 parse for the hybrid backend, 2 does not.
  for (size_t k : {1, 2, 3}) part.route[k] = route_after_engine_failure(k != 2);
  std::vector<size_t> hybrid, in_place;
  std::vector<bool> bad;
  finish_part(
      part,
      [&](size_t k) {
        hybrid.push_back(k);
        return k != 3;
      },
      [&](size_t k) {
        in_place.push_back(k);
        return k != 3;
      },
      bad);
  EXPECT_EQ(hybrid, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(in_place, (std::vector<size_t>{2, 3})) << "every sample nvJPEG refused late";
  EXPECT_EQ(bad, (std::vector<bool>{false, false, false, true, false}));
  EXPECT_EQ(part.route[1], Route::hybrid);
  EXPECT_EQ(part.route[2], Route::cpu_in_place);
  EXPECT_EQ(part.route[3], Route::cpu_in_place);
  EXPECT_EQ(part.route[4], Route::cpu) << "decoded with the part's staging, before the engine";
}

// whole_image counts what nvJPEG decoded beyond the window: a crop as wide as the image but
// not as tall is one; a sample libjpeg-turbo decoded in nvJPEG's place is not.
TEST(DecodeParts, WholeImageCountsNvjpegDecodesBeyondTheWindow) {
  EncodedSample e = sample(640, 480, 224);
  e.region = {0, 100, 640, 200};  // the full width
  EXPECT_TRUE(decoded_whole_image(Route::hardware, image_place(e, 0)));
  EXPECT_TRUE(decoded_whole_image(Route::hybrid, image_place(e, 0)));
  EXPECT_FALSE(decoded_whole_image(Route::hardware, window_place(e, 0)));
  EXPECT_FALSE(decoded_whole_image(Route::cpu_in_place, image_place(e, 0)));
  EXPECT_FALSE(decoded_whole_image(Route::cpu, pixels_place(e, 0)));
  e.region = {10, 0, 300, 480};  // the full height
  EXPECT_TRUE(decoded_whole_image(Route::hardware, image_place(e, 0)));
  e.region = {0, 0, 640, 480};  // the image: its window and the image are the same pixels
  EXPECT_FALSE(decoded_whole_image(Route::hardware, image_place(e, 0)));
}

}  // namespace
}  // namespace stoker::gpu
