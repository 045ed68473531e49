// SPDX-License-Identifier: Apache-2.0
// The backend registry: which backends this build has.
#include "train/backend.h"

#include "common/error.h"
#ifdef STOKER_HAVE_DNNL
#include "train/cpu/cpu_backend.h"
#endif
#ifdef STOKER_HAVE_CUDA
#include "train/gpu/cuda_backend.h"
#endif

namespace stoker {

std::unique_ptr<Backend> make_backend(std::string_view name, [[maybe_unused]] const Network& net,
                                      [[maybe_unused]] const BackendConfig& config) {
  if (name == "cpu") {
#ifdef STOKER_HAVE_DNNL
    return cpu::make_cpu_backend(net, config);
#else
    fail(
        "backend 'cpu' is not built in: oneDNN was not found at configure time (Debian: "
        "libdnnl-dev; then reconfigure with -DSTOKER_WITH_DNNL=ON)");
#endif
  }
  if (name == "cuda") {
#ifdef STOKER_HAVE_CUDA
    return gpu::make_cuda_backend(net, config);
#else
    fail(
        "backend 'cuda' is not built in: the CUDA toolkit (nvcc, cuDNN, cuBLAS, CUPTI) was not "
        "found at configure time (reconfigure with -DSTOKER_WITH_CUDA=ON)");
#endif
  }
  fail("unknown backend '{}': expected cpu or cuda", name);
}

}  // namespace stoker
