// SPDX-License-Identifier: Apache-2.0
// Baseline JPEG encoding through libjpeg-turbo's libjpeg API, with the settings OpenCV's
// cv::imencode(".jpg") uses (jpeg_set_defaults, baseline quality tables, 4:2:0, no
// optimised Huffman tables), so its bytes are the same (tests/augment/encode_jpeg_test.cc):
// `stoker gen` and the null source write JPEGs without OpenCV's imgcodecs chain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoker {

// rgb: [height][stride] bytes, each row `width` RGB pixels (stride >= 3 * width).
// quality: 1..100. Returns the JPEG file's bytes; throws stoker::Error if libjpeg fails.
std::vector<uint8_t> encode_jpeg_rgb(const uint8_t* rgb, int width, int height, size_t stride,
                                     int quality);

}  // namespace stoker
