// SPDX-License-Identifier: Apache-2.0
// The backend registry (which backends this build has) and the names of the configuration
// words shared by every backend. The backends themselves live in train/cpu and train/gpu.
#include "train/backend.h"

#include "common/error.h"
#ifdef STOKER_HAVE_DNNL
#include "train/cpu/cpu_backend.h"
#endif
#ifdef STOKER_HAVE_CUDA
#include "train/gpu/cuda_backend.h"
#endif

namespace stoker {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::f32:
      return "f32";
    case Precision::tf32:
      return "tf32";
    case Precision::f16:
      return "f16";
    case Precision::bf16:
      return "bf16";
  }
  return "?";
}

Precision parse_precision(std::string_view name) {
  for (Precision p : {Precision::f32, Precision::tf32, Precision::f16, Precision::bf16})
    if (name == precision_name(p)) return p;
  fail("unknown precision '{}': expected f32, tf32, f16 or bf16", name);
}

std::string_view compute_layout_name(ComputeLayout l) {
  switch (l) {
    case ComputeLayout::automatic:
      return "auto";
    case ComputeLayout::nchw:
      return "nchw";
    case ComputeLayout::nhwc:
      return "nhwc";
  }
  return "?";
}

ComputeLayout parse_compute_layout(std::string_view name) {
  for (ComputeLayout l : {ComputeLayout::automatic, ComputeLayout::nchw, ComputeLayout::nhwc})
    if (name == compute_layout_name(l)) return l;
  fail("unknown compute layout '{}': expected auto, nchw or nhwc", name);
}

std::vector<std::string> built_backends() {
  std::vector<std::string> names;
#ifdef STOKER_HAVE_DNNL
  names.emplace_back("cpu");
#endif
#ifdef STOKER_HAVE_CUDA
  names.emplace_back("cuda");
#endif
  return names;
}

namespace {

// Why no backend of that name is here: not built in (and what it needs), or unknown.
[[noreturn]] void no_backend(std::string_view given) {
  const std::string_view name = backend_name(given);
  if (name == "cpu")
    fail(
        "backend 'cpu' is not built in: oneDNN 3 was not found at configure time "
        "(scripts/deps.sh unpacks PyPI's onednn-cpu-gomp into /opt/stoker-deps/onednn; then "
        "reconfigure with -DSTOKER_WITH_DNNL=ON)");
  if (name == "cuda")
    fail(
        "backend 'cuda' is not built in: the CUDA toolkit (cuDNN, cuBLAS) was not found at "
        "configure time or STOKER_WITH_CUDA=OFF (use --backend cpu)");
  fail("unknown backend '{}': expected cpu or cuda", given);
}

}  // namespace

std::unique_ptr<Backend> make_backend(std::string_view given, [[maybe_unused]] const Network& net,
                                      [[maybe_unused]] const BackendConfig& config) {
  [[maybe_unused]] const std::string_view name = backend_name(given);
#ifdef STOKER_HAVE_DNNL
  if (name == "cpu") return cpu::make_cpu_backend(net, config);
#endif
#ifdef STOKER_HAVE_CUDA
  if (name == "cuda") return gpu::make_cuda_backend(net, config);
#endif
  no_backend(given);
}

BackendCaps backend_caps(std::string_view given) {
  [[maybe_unused]] const std::string_view name = backend_name(given);
#ifdef STOKER_HAVE_DNNL
  if (name == "cpu") return cpu::cpu_caps();
#endif
#ifdef STOKER_HAVE_CUDA
  if (name == "cuda") return gpu::cuda_caps();
#endif
  no_backend(given);
}

}  // namespace stoker
