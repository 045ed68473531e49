// SPDX-License-Identifier: Apache-2.0
// The oneDNN status check of dnnl_check.h.
#include "train/cpu/dnnl_check.h"

#include <oneapi/dnnl/dnnl_debug.h>

namespace stoker::cpu {

void dnnl_failed(const char* what, const dnnl::error& e) {
  fail(
      "oneDNN call {} failed with status {}: {} (hint: 'unimplemented' means no oneDNN "
      "implementation accepts these shapes on this CPU; run with ONEDNN_VERBOSE=all to see why)",
      what, dnnl_status2str(e.status), e.what());
}

}  // namespace stoker::cpu
