// SPDX-License-Identifier: Apache-2.0
// The backend's library handles and cuDNN descriptors as owning handles (common/cuda/handle.h,
// where streams and events are too): destroyed with their owner, so that an error thrown while
// planning leaks none of them.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "common/cuda/handle.h"

namespace stoker::gpu {

using CudnnHandle = Handle<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = Handle<cublasHandle_t, cublasDestroy>;
using TensorDesc = Handle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = Handle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = Handle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Handle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using ActivationDesc = Handle<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

}  // namespace stoker::gpu
