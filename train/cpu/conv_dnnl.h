// SPDX-License-Identifier: Apache-2.0
// 2-D convolution on oneDNN, fp32: forward, backward-data, backward-weights, planned once per
// shape. Tensors cross this API in plain NCHW / OIHW; inside, each primitive works in the
// layout oneDNN chose (format_tag::any) and a reorder runs only where that differs. A network
// will instead keep the chosen (blocked) layouts between layers and reorder only at its edges.
// Groups 1, dilation 1, no bias, same stride and padding in both directions (ResNet's convs).
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

namespace stoker::cpu {

struct ConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input: N x C x H x W
  int64_t k = 0;                       // output channels
  int64_t kh = 0, kw = 0;              // kernel
  int64_t stride = 1, pad = 0;

  int64_t oh() const { return (h + 2 * pad - kh) / stride + 1; }  // torch's rule (floor)
  int64_t ow() const { return (w + 2 * pad - kw) / stride + 1; }
};

// One tensor as a primitive sees it: `user` wraps the caller's plain buffer (its handle is
// set per call), `inner` is what the primitive reads or writes, the same memory when
// oneDNN's layout is the plain one, else a buffer of oneDNN's layout allocated once, with
// `reorder` between them (user -> inner for inputs, inner -> user for outputs).
struct DnnlOperand {
  dnnl::memory user;
  dnnl::memory inner;
  dnnl::reorder reorder;
  std::unordered_map<int, dnnl::memory> reorder_args;  // built once, reused by every call
  bool reordered = false;
};

// Lifetime: the layer holds its own reference to the engine; buffers passed to a call are
// used only during it. Not thread-safe: one call at a time (its memories are reused).
// Steady state: no tensor or scratchpad allocation after construction (oneDNN's C++ wrapper
// still copies the prebuilt argument map into a small vector on each execute).
struct ConvDnnl {
  // Plans the three primitives (backward-data only if need_din; the network's first conv
  // does not need it). Throws stoker::Error for a shape no convolution has (kernel larger
  // than the padded input, non-positive sizes) or that oneDNN rejects.
  ConvDnnl(const dnnl::engine& engine, const ConvShape& shape, bool need_din = true);

  // out = conv(in, weight).
  void forward(float* out,            // N x K x OH x OW
               const float* in,       // N x C x H x W
               const float* weight);  // K x C x KH x KW

  // Writes (never accumulates) dweight and, if the layer was planned with need_din, din
  // (which must then be non-null; else it must be null).
  void backward(float* din,            // N x C x H x W, or nullptr without need_din
                float* dweight,        // K x C x KH x KW
                const float* dout,     // N x K x OH x OW
                const float* in,       // N x C x H x W
                const float* weight);  // K x C x KH x KW

  // The layouts and implementations oneDNN chose, one line per primitive, for logs.
  std::string describe() const;

  ConvShape shape;
  bool need_din;
  dnnl::engine engine;
  dnnl::stream stream;

  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;  // empty without need_din
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;

  DnnlOperand fwd_src, fwd_weights, fwd_dst;         // forward
  DnnlOperand bd_diff_dst, bd_weights, bd_diff_src;  // backward-data
  DnnlOperand bw_src, bw_diff_dst, bw_diff_weights;  // backward-weights
  dnnl::memory scratchpad;  // shared by the three primitives (scratchpad_mode::user)
  std::unordered_map<int, dnnl::memory> fwd_args, bwd_data_args, bwd_weights_args;
};

}  // namespace stoker::cpu
