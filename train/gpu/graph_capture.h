// SPDX-License-Identifier: Apache-2.0
// A training step's forward, backward and update as three CUDA Graphs, captured once per
// input shape after a few eager steps and replayed after that. Capture and ownership only:
// the backend decides when to capture and launches the graphs between its step events.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <functional>

#include "common/cuda/handle.h"

namespace stoker::gpu {

using GraphExecHandle = Handle<cudaGraphExec_t, cudaGraphExecDestroy>;

// Eager steps before a CUDA Graph is captured: the libraries' lazy set-up (handles, kernels
// loaded on first use) happens outside the capture.
constexpr int kWarmSteps = 2;

struct StepGraphs {
  std::array<GraphExecHandle, 3> graphs;  // forward, backward, update (capture())
  int eager_steps = 0;                    // graph steps run eagerly since the last destroy()

  // Each of `parts` (the enqueues of forward, backward and update) captured on `stream` and
  // instantiated; on an error none is kept and the error goes on.
  void capture(cudaStream_t stream, const std::array<std::function<void()>, 3>& parts);
  void destroy();
};

}  // namespace stoker::gpu
