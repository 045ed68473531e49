// SPDX-License-Identifier: Apache-2.0
// The backend registry: which backends this build has.
#include "train/backend.h"

#include "common/error.h"
#ifdef STOKER_HAVE_DNNL
#include "train/cpu/cpu_backend.h"
#endif

namespace stoker {

std::unique_ptr<Backend> make_backend(std::string_view name, const Network& net,
                                      const BackendConfig& config) {
  if (name == "cpu") {
#ifdef STOKER_HAVE_DNNL
    return cpu::make_cpu_backend(net, config);
#else
    fail(
        "backend 'cpu' is not built in: oneDNN was not found at configure time (Debian: "
        "libdnnl-dev; then reconfigure with -DSTOKER_WITH_DNNL=ON)");
#endif
  }
  if (name == "gpu") fail("backend 'gpu' (cuDNN) is not built yet; use --backend cpu");
  fail("unknown backend '{}': expected cpu or gpu", name);
}

}  // namespace stoker
