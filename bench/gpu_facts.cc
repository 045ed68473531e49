// SPDX-License-Identifier: Apache-2.0
// The facts about a machine's CUDA stack that reading the code could not settle (issue 23,
// item 10), printed as one JSON document for the first GPU run to answer. Not a test: it
// asserts nothing, and a fact it cannot establish is printed with the reason. Usage:
//   gpu_facts > facts.json      (exit code 77 and "SKIP[no-cuda-device]: ..." where no device can
//   run)
// Facts: library versions; the id CUPTI's records give a stream (cuptiGetStreamIdEx, which
// the backend maps by) against cudaStreamGetId, for eager and graph-launched kernels; whether
// CUPTI's timestamps are the steady clock once the backend's callback is registered; which
// legacy batch-norm, pooling and fused BN+ReLU calls the installed cuDNN takes in bf16 and f16;
// whether persistent batch norm (non-Ex) can be captured into a CUDA Graph and whether capture
// allocates; NCCL's bit-identity of all-reduce results across ranks (two devices or more);
// cuDNN's own description of the device (the frontend's device properties, as JSON).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti_activity.h>
#include <cupti_version.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_fe_graphs.h"
#include "train/gpu/cupti_records.h"
#include "train/gpu/device.h"
#include "train/gpu/kernels/kernels.h"
#ifdef STOKER_HAVE_NCCL
#include <nccl.h>
#endif

namespace stoker::gpu {
namespace {

using nlohmann::json;

// Every kernel record CUPTI delivers: name, stream id, graph id, start, end.
struct Collected {
  std::mutex mutex;
  json kernels = json::array();
};
Collected& collected() {
  static Collected c;
  return c;
}

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, size_t(4) << 20));
  *size = *buffer ? size_t(4) << 20 : 0;
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  std::lock_guard lock(collected().mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(*r);
    collected().kernels.push_back({{"name", short_kernel_name(k.name ? k.name : "?")},
                                   {"stream", k.streamId},
                                   {"graph", k.graphId},
                                   {"start", k.start},
                                   {"end", k.end}});
  }
  std::free(buffer);
}

uint64_t CUPTIAPI steady() {
  return cupti_steady_timestamp();
}

std::string status_text(cudnnStatus_t s) {
  return s == CUDNN_STATUS_SUCCESS ? "ok" : cudnnGetErrorString(s);
}

json versions() {
  int driver = 0, runtime = 0, cublas = 0;
  uint32_t cupti = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cublasGetProperty(MAJOR_VERSION, &cublas);
  int cublas_minor = 0, cublas_patch = 0;
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  cuptiGetVersion(&cupti);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  json j = {{"device", prop.name},
            {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
            {"sms", prop.multiProcessorCount},
            {"memory_bytes", prop.totalGlobalMem},
            {"driver", driver},
            {"runtime", runtime},
            {"cudnn", cudnnGetVersion()},
            {"cublas", fmt::format("{}.{}.{}", cublas, cublas_minor, cublas_patch)},
            {"cupti_api", cupti}};
#ifdef STOKER_HAVE_NCCL
  int nccl = 0;
  ncclGetVersion(&nccl);
  j["nccl"] = nccl;
#endif
  return j;
}

// Kernels launched eagerly and from a CUDA Graph on two streams: the ids CUPTI's records carry
// against cuptiGetStreamIdEx (the backend's mapping) and cudaStreamGetId; and whether the
// records' timestamps fall inside the host steady-clock window around them.
json stream_ids_and_clock() {
  cudaStream_t a = nullptr, b = nullptr;
  STOKER_GPU(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  STOKER_GPU(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  STOKER_GPU(cuptiActivityRegisterTimestampCallback(steady));
  STOKER_GPU(cuptiActivityRegisterCallbacks(on_request, on_complete));
  STOKER_GPU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  json ids = json::object();
  for (auto [name, s] : {std::pair{"a", a}, std::pair{"b", b}}) {
    uint32_t cupti = 0;
    unsigned long long runtime = 0;
    STOKER_GPU(cuptiGetStreamIdEx(nullptr, s, 0, &cupti));
    STOKER_GPU(cudaStreamGetId(s, &runtime));
    ids[name] = {{"cuptiGetStreamIdEx", cupti}, {"cudaStreamGetId", runtime}};
  }
  const int64_t before = now_ns();
  step_marker(a);  // eager, stream a
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  STOKER_GPU(cudaStreamBeginCapture(b, cudaStreamCaptureModeThreadLocal));
  step_marker(b);
  STOKER_GPU(cudaStreamEndCapture(b, &graph));
  STOKER_GPU(cudaGraphInstantiate(&exec, graph, 0));
  STOKER_GPU(cudaGraphLaunch(exec, a));  // captured on b, launched on a
  STOKER_GPU(cudaGraphLaunch(exec, b));  // and on b
  STOKER_GPU(cudaDeviceSynchronize());
  const int64_t after = now_ns();
  STOKER_GPU(cuptiActivityFlushAll(0));
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  std::lock_guard lock(collected().mutex);
  bool inside = !collected().kernels.empty();
  for (const json& k : collected().kernels)
    inside = inside && k["start"].get<int64_t>() >= before && k["end"].get<int64_t>() <= after;
  return {{"streams", ids},
          {"launches", "1: eager on a; 2: graph captured on b, launched on a; 3: same on b"},
          {"kernel_records", collected().kernels},
          {"host_window_ns", {before, after}},
          {"timestamps_inside_steady_window", inside}};
}

// One batch-norm / pooling configuration in `type` and `nhwc`: each legacy call's status.
json cudnn_ops(cudnnHandle_t h, cudnnDataType_t type, bool nhwc) {
  const int n = 4, c = 64, hw = 8;
  const size_t elems = size_t(n * c * hw * hw);
  void *x = nullptr, *y = nullptr, *dy = nullptr, *dx = nullptr, *p = nullptr, *ws = nullptr;
  for (void** q : {&x, &y, &dy, &dx}) STOKER_GPU(cudaMalloc(q, elems * 4));
  STOKER_GPU(cudaMalloc(&p, size_t(8 * c) * 4));
  STOKER_GPU(cudaMalloc(&ws, size_t(64) << 20));
  for (void* q : {x, y, dy, dx}) STOKER_GPU(cudaMemset(q, 0, elems * 4));
  STOKER_GPU(cudaMemset(p, 0, size_t(8 * c) * 4));
  float* f = static_cast<float*>(p);
  cudnnTensorDescriptor_t t = nullptr, bn = nullptr, pooled = nullptr;
  cudnnCreateTensorDescriptor(&t);
  cudnnCreateTensorDescriptor(&bn);
  cudnnCreateTensorDescriptor(&pooled);
  const cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  cudnnSetTensor4dDescriptor(t, fmt, type, n, c, hw, hw);
  cudnnSetTensor4dDescriptor(pooled, fmt, type, n, c, hw / 2, hw / 2);
  const float one = 1, zero = 0;
  json j = json::object();
  for (auto mode : {CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_SPATIAL_PERSISTENT}) {
    const std::string m = mode == CUDNN_BATCHNORM_SPATIAL ? "spatial" : "persistent";
    cudnnDeriveBNTensorDescriptor(bn, t, mode);
    j["bn_forward_" + m] = status_text(
        cudnnBatchNormalizationForwardTraining(h, mode, &one, &zero, t, x, t, y, bn, f, f + c, 0.1,
                                               f + 2 * c, f + 3 * c, 1e-5, f + 4 * c, f + 5 * c));
    j["bn_backward_" + m] = status_text(
        cudnnBatchNormalizationBackward(h, mode, &one, &zero, &one, &zero, t, x, t, dy, t, dx, bn,
                                        f, f + 6 * c, f + 7 * c, 1e-5, f + 4 * c, f + 5 * c));
  }
  cudnnActivationDescriptor_t relu = nullptr;
  cudnnCreateActivationDescriptor(&relu);
  cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0);
  size_t reserve = 0;
  const cudnnBatchNormMode_t pm = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  cudnnDeriveBNTensorDescriptor(bn, t, pm);
  const cudnnStatus_t rs = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
      h, pm, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, relu, t, &reserve);
  j["bn_relu_fused_reserve_query"] = status_text(rs);
  if (rs == CUDNN_STATUS_SUCCESS && reserve <= size_t(32) << 20) {
    char* r = static_cast<char*>(ws) + (size_t(32) << 20);
    j["bn_relu_fused_forward"] = status_text(cudnnBatchNormalizationForwardTrainingEx(
        h, pm, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, &one, &zero, t, x, nullptr, nullptr, t, y, bn, f,
        f + c, 0.1, f + 2 * c, f + 3 * c, 1e-5, f + 4 * c, f + 5 * c, relu, ws, size_t(32) << 20, r,
        reserve));
    j["bn_relu_fused_backward"] = status_text(cudnnBatchNormalizationBackwardEx(
        h, pm, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, &one, &zero, &one, &zero, t, x, t, y, t, dy,
        nullptr, nullptr, t, dx, bn, f, f + c, f + 6 * c, f + 7 * c, 1e-5, f + 4 * c, f + 5 * c,
        relu, ws, size_t(32) << 20, r, reserve));
  }
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnCreatePoolingDescriptor(&pool);
  cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 3, 3, 1, 1, 2, 2);
  j["maxpool_forward"] = status_text(cudnnPoolingForward(h, pool, &one, t, x, &zero, pooled, y));
  j["maxpool_backward"] =
      status_text(cudnnPoolingBackward(h, pool, &one, pooled, y, pooled, dy, t, x, &zero, t, dx));
  j["sync"] = cudaGetErrorName(cudaDeviceSynchronize());
  cudnnDestroyPoolingDescriptor(pool);
  cudnnDestroyActivationDescriptor(relu);
  for (auto d : {t, bn, pooled}) cudnnDestroyTensorDescriptor(d);
  for (void* q : {x, y, dy, dx, p, ws}) cudaFree(q);
  return j;
}

json cudnn_support() {
  cudnnHandle_t h = nullptr;
  STOKER_GPU(cudnnCreate(&h));
  json j = json::object();
  for (auto [name, type] : {std::pair{"bf16", CUDNN_DATA_BFLOAT16},
                            std::pair{"f16", CUDNN_DATA_HALF}, std::pair{"f32", CUDNN_DATA_FLOAT}})
    for (bool nhwc : {true, false})
      j[fmt::format("{}_{}", name, nhwc ? "nhwc" : "nchw")] = cudnn_ops(h, type, nhwc);
  cudnnDestroy(h);
  return j;
}

// Non-Ex persistent batch norm (the backend's path without fusion) inside a stream capture:
// does capture succeed, does device memory in use change, does the graph run.
json persistent_bn_capture() {
  cudnnHandle_t h = nullptr;
  cudaStream_t s = nullptr;
  STOKER_GPU(cudnnCreate(&h));
  STOKER_GPU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  STOKER_GPU(cudnnSetStream(h, s));
  const int n = 32, c = 256, hw = 14;
  const size_t elems = size_t(n) * c * hw * hw;
  void *x = nullptr, *y = nullptr, *p = nullptr;
  STOKER_GPU(cudaMalloc(&x, elems * 2));
  STOKER_GPU(cudaMalloc(&y, elems * 2));
  STOKER_GPU(cudaMalloc(&p, size_t(6 * c) * 4));
  STOKER_GPU(cudaMemset(x, 0, elems * 2));
  STOKER_GPU(cudaMemset(p, 0, size_t(6 * c) * 4));
  float* f = static_cast<float*>(p);
  cudnnTensorDescriptor_t t = nullptr, bn = nullptr;
  cudnnCreateTensorDescriptor(&t);
  cudnnCreateTensorDescriptor(&bn);
  cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, n, c, hw, hw);
  const auto mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  cudnnDeriveBNTensorDescriptor(bn, t, mode);
  const float one = 1, zero = 0;
  const auto bn_call = [&] {
    return cudnnBatchNormalizationForwardTraining(h, mode, &one, &zero, t, x, t, y, bn, f, f + c,
                                                  0.1, f + 2 * c, f + 3 * c, 1e-5, f + 4 * c,
                                                  f + 5 * c);
  };
  json j = {{"eager", status_text(bn_call())}};
  STOKER_GPU(cudaStreamSynchronize(s));
  size_t free0 = 0, free1 = 0, total = 0;
  cudaMemGetInfo(&free0, &total);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  STOKER_GPU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  j["captured_call"] = status_text(bn_call());
  j["end_capture"] = cudaGetErrorName(cudaStreamEndCapture(s, &graph));
  cudaMemGetInfo(&free1, &total);
  j["device_bytes_taken_during_capture"] = int64_t(free0) - int64_t(free1);
  if (graph) {
    j["instantiate"] = cudaGetErrorName(cudaGraphInstantiate(&exec, graph, 0));
    if (exec) {
      j["launch"] = cudaGetErrorName(cudaGraphLaunch(exec, s));
      j["sync"] = cudaGetErrorName(cudaStreamSynchronize(s));
      cudaGraphExecDestroy(exec);
    }
    cudaGraphDestroy(graph);
  }
  cudaGetLastError();
  cudnnDestroyTensorDescriptor(t);
  cudnnDestroyTensorDescriptor(bn);
  for (void* q : {x, y, p}) cudaFree(q);
  cudnnDestroy(h);
  cudaStreamDestroy(s);
  return j;
}

// NCCL all-reduce across every visible device in this process (ncclCommInitAll): do the ranks
// hold bit-identical sums? data_parallel_cuda_test relies on it. One device: not decidable.
json nccl_bit_identity() {
#ifndef STOKER_HAVE_NCCL
  return {{"skipped", "built without NCCL"}};
#else
  int devices = 0;
  cudaGetDeviceCount(&devices);
  if (devices < 2)
    return {{"skipped", fmt::format("needs 2 devices; this machine has {}", devices)}};
  const int ranks = devices;
  const size_t count = size_t(1) << 22;
  std::vector<ncclComm_t> comms(static_cast<size_t>(ranks));
  std::vector<float*> buf(static_cast<size_t>(ranks));
  std::vector<cudaStream_t> streams(static_cast<size_t>(ranks));
  if (ncclCommInitAll(comms.data(), ranks, nullptr) != ncclSuccess)
    return {{"error", "ncclCommInitAll failed"}};
  std::vector<float> host(count);
  for (int r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < count; ++i)
      host[i] = float((i * 2654435761u + size_t(r)) % 1000003) * 1e-3f;
    STOKER_GPU(cudaSetDevice(r));
    STOKER_GPU(cudaStreamCreate(&streams[size_t(r)]));
    STOKER_GPU(cudaMalloc(&buf[size_t(r)], count * 4));
    STOKER_GPU(cudaMemcpy(buf[size_t(r)], host.data(), count * 4, cudaMemcpyHostToDevice));
  }
  ncclGroupStart();
  for (int r = 0; r < ranks; ++r)
    ncclAllReduce(buf[size_t(r)], buf[size_t(r)], count, ncclFloat, ncclSum, comms[size_t(r)],
                  streams[size_t(r)]);
  ncclGroupEnd();
  std::vector<float> first(count);
  int64_t differing = 0;
  for (int r = 0; r < ranks; ++r) {
    STOKER_GPU(cudaSetDevice(r));
    STOKER_GPU(cudaStreamSynchronize(streams[size_t(r)]));
    STOKER_GPU(cudaMemcpy(r == 0 ? first.data() : host.data(), buf[size_t(r)], count * 4,
                          cudaMemcpyDeviceToHost));
    if (r > 0)
      for (size_t i = 0; i < count; ++i) differing += std::memcmp(&first[i], &host[i], 4) != 0;
    cudaFree(buf[size_t(r)]);
    ncclCommDestroy(comms[size_t(r)]);
  }
  cudaSetDevice(0);
  return {{"ranks", ranks}, {"elements", count}, {"elements_differing_from_rank0", differing}};
#endif
}

// cuDNN's description of device 0 (fe::DeviceProperties::serialize), for planning the frontend's
// graphs for this GPU on machines without one: it replaces the hand-written
// tests/train/fixtures/h200_cudnn_device.json that fe_graphs_test plans for.
json cudnn_device_properties() {
  if (!fe_graphs_built()) return {{"error", "this build has no cuDNN frontend"}};
  const std::string text = fe_device_json(0);
  const json parsed = json::parse(text, nullptr, false);
  return parsed.is_discarded() ? json{{"not_json", text}} : parsed;
}

// Runs one fact, recording its error instead of stopping the rest.
json attempt(json (*fact)()) {
  try {
    return fact();
  } catch (const Error& e) {
    cudaGetLastError();
    return {{"error", e.what()}};
  }
}

}  // namespace
}  // namespace stoker::gpu

int main(int argc, char**) {
  using namespace stoker::gpu;
  if (argc > 1) {
    std::fprintf(stderr, "usage: gpu_facts > facts.json (no options)\n");
    return 2;
  }
  const std::string why = device_unavailable_reason(0);
  if (!why.empty()) {
    std::fprintf(stderr, "SKIP[no-cuda-device]: gpu_facts: %s\n", why.c_str());
    return 77;
  }
  nlohmann::json out = {{"tool", "gpu_facts"}};
  out["versions"] = attempt(versions);
  out["cupti_stream_ids_and_clock"] = attempt(stream_ids_and_clock);
  out["cudnn_legacy_ops"] = attempt(cudnn_support);
  out["persistent_bn_in_graph_capture"] = attempt(persistent_bn_capture);
  out["nccl_bit_identity"] = attempt(nccl_bit_identity);
  out["cudnn_device_properties"] = attempt(cudnn_device_properties);
  out["not_decidable_here"] =
      "persistent NHWC batch norm beside NCCL kernels (an SM margin?) needs a data-parallel run "
      "on 2+ GPUs: data_parallel_cuda_test under mpirun";
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
