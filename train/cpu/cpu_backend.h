// SPDX-License-Identifier: Apache-2.0
// The CPU backend: a DnnlNet (dnnl_net.h) behind the Backend interface, plus SGD over its
// raw parameter buffers. oneDNN runs on OpenMP here: the thread count is OpenMP's
// (OMP_NUM_THREADS, or omp_set_num_threads before the first step).
#pragma once

#include <memory>

#include "train/backend.h"
#include "train/cpu/dnnl_net.h"

namespace stoker::cpu {

// What the CPU backend can do (Backend::caps): synchronous, on the heap, f32 and bf16.
BackendCaps cpu_caps();

// stoker::Error when bf16 is asked for on a CPU without native bf16 (AVX512_BF16 or AMX).
std::unique_ptr<Backend> make_cpu_backend(const Network& net, const BackendConfig& config);

// The planned net behind a backend made by make_cpu_backend, for tests and reports.
DnnlNet& dnnl_net_of(Backend& backend);

// Whether this CPU runs bf16 natively, and oneDNN's name for its best instruction set.
bool cpu_has_native_bf16();
std::string cpu_isa_name();

}  // namespace stoker::cpu
