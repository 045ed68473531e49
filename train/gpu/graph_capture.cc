// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/graph_capture.h"

#include "train/gpu/cuda_check.h"

namespace stoker::gpu {
namespace {

cudaGraphExec_t capture_one(cudaStream_t stream, const std::function<void()>& enqueue) {
  STOKER_GPU(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t graph = nullptr;
  STOKER_GPU(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t st = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  STOKER_GPU(st);
  return exec;
}

}  // namespace

void StepGraphs::capture(cudaStream_t stream, const std::array<std::function<void()>, 3>& parts) {
  try {
    for (size_t i = 0; i < parts.size(); ++i) graphs[i].reset(capture_one(stream, parts[i]));
  } catch (...) {
    destroy();
    throw;
  }
}

void StepGraphs::destroy() {
  for (GraphExecHandle& g : graphs) g.reset();
}

}  // namespace stoker::gpu
