// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the image path: sniff, open, DCT-scaled region decode, resize
// (fuzz/fuzz_entry.h). A refusal (stoker::Error) is a correct answer; any other exception, a
// crash, a sanitizer report or a failed STOKER_CHECK is a finding. Built only with -DSTOKER_FUZZ=ON
// (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "fuzz/fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    stoker::fuzz::image_decode({data, size});
  } catch (const stoker::Error&) {
  }
  return 0;
}
