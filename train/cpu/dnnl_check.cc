// SPDX-License-Identifier: Apache-2.0
// The oneDNN status check and the layout printer of dnnl_check.h.
#include "train/cpu/dnnl_check.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace stoker::cpu {

void dnnl_failed(const char* what, const dnnl::error& e) {
  fail(
      "oneDNN call {} failed with status {}: {} (hint: 'unimplemented' means no oneDNN "
      "implementation accepts these shapes on this CPU; run with ONEDNN_VERBOSE=all to see why)",
      what, dnnl_status2str(e.status), e.what());
}

std::string format_of(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return "(not blocked)";
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  std::vector<int> order(static_cast<size_t>(d.ndims));
  std::iota(order.begin(), order.end(), 0);
  // Outermost (largest stride) first; ties keep the logical order, as oneDNN's tags do.
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string s;
  for (int i : order) {
    bool blocked = false;
    for (int k = 0; k < b.inner_nblks; ++k) blocked = blocked || b.inner_idxs[k] == i;
    s += static_cast<char>((blocked ? 'A' : 'a') + i);
  }
  for (int k = 0; k < b.inner_nblks; ++k)
    s += std::to_string(b.inner_blks[k]) + static_cast<char>('a' + b.inner_idxs[k]);
  return s;
}

}  // namespace stoker::cpu
