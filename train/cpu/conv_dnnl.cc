// SPDX-License-Identifier: Apache-2.0
// The oneDNN convolution of conv_dnnl.h: planning (primitive descriptors in format_tag::any,
// backward ones hinted by the forward one, memories and reorders) and the three executions.
#include "train/cpu/conv_dnnl.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "train/cpu/dnnl_check.h"

namespace stoker::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

enum class Dir { kIn, kOut };

// The operand for a tensor of plain layout `plain` that a primitive wants as `wanted`.
DnnlOperand make_operand(const dnnl::engine& engine, const memory::desc& plain,
                         const memory::desc& wanted, Dir dir) {
  DnnlOperand op;
  // No handle yet: each call points it at the caller's buffer.
  op.user = STOKER_DNNL(memory(plain, engine, DNNL_MEMORY_NONE));
  if (wanted == plain) {
    op.inner = op.user;
    return op;
  }
  op.inner = STOKER_DNNL(memory(wanted, engine));
  op.reorder = dir == Dir::kIn ? STOKER_DNNL(dnnl::reorder(op.user, op.inner))
                               : STOKER_DNNL(dnnl::reorder(op.inner, op.user));
  op.reorder_args = {{DNNL_ARG_FROM, dir == Dir::kIn ? op.user : op.inner},
                     {DNNL_ARG_TO, dir == Dir::kIn ? op.inner : op.user}};
  op.reordered = true;
  return op;
}

// Points the operand at the caller's buffer and, for an input, brings it into oneDNN's layout.
void bind_in(DnnlOperand& op, const float* data, dnnl::stream& stream) {
  // oneDNN takes void*; inputs are only read.
  STOKER_DNNL(op.user.set_data_handle(const_cast<float*>(data)));
  if (op.reordered) STOKER_DNNL(op.reorder.execute(stream, op.reorder_args));
}

void bind_out(DnnlOperand& op, float* data) {
  STOKER_DNNL(op.user.set_data_handle(data));
}

void finish_out(DnnlOperand& op, dnnl::stream& stream) {
  if (op.reordered) STOKER_DNNL(op.reorder.execute(stream, op.reorder_args));
}

void validate(const ConvShape& s) {
  const bool positive = s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0 && s.k > 0 && s.kh > 0 &&
                        s.kw > 0 && s.stride > 0 && s.pad >= 0;
  const auto text = [&] {
    return fmt::format("N={} C={} H={} W={} K={} kernel {}x{} stride {} pad {}", s.n, s.c, s.h, s.w,
                       s.k, s.kh, s.kw, s.stride, s.pad);
  };
  if (!positive)
    fail("conv (oneDNN): bad shape {}: expected positive sizes and stride, padding >= 0", text());
  if (s.kh > s.h + 2 * s.pad || s.kw > s.w + 2 * s.pad)
    fail(
        "conv (oneDNN): bad shape {}: kernel {}x{} is larger than the padded input {}x{}; "
        "hint: more padding or a larger input",
        text(), s.kh, s.kw, s.h + 2 * s.pad, s.w + 2 * s.pad);
}

}  // namespace

ConvDnnl::ConvDnnl(const dnnl::engine& eng, const ConvShape& s, bool din)
    : shape(s), need_din(din), engine(eng) {
  validate(s);
  stream = STOKER_DNNL(dnnl::stream(engine));

  const memory::dims src_dims = {s.n, s.c, s.h, s.w};
  const memory::dims w_dims = {s.k, s.c, s.kh, s.kw};
  const memory::dims dst_dims = {s.n, s.k, s.oh(), s.ow()};
  const memory::dims strides = {s.stride, s.stride};
  const memory::dims pad = {s.pad, s.pad};
  // Both sides `pad`, as torch: oneDNN checks (h - kh + 2 pad) / stride + 1 == oh with the same
  // floor, and taps past the last window are never read.
  const memory::dims pad_r = pad;

  const memory::desc src_plain(src_dims, dt::f32, tag::nchw);
  const memory::desc w_plain(w_dims, dt::f32, tag::oihw);
  const memory::desc dst_plain(dst_dims, dt::f32, tag::nchw);
  const memory::desc src_any(src_dims, dt::f32, tag::any);
  const memory::desc w_any(w_dims, dt::f32, tag::any);
  const memory::desc dst_any(dst_dims, dt::f32, tag::any);

  const auto algo = dnnl::algorithm::convolution_direct;
  // Scratchpad in user mode: one buffer, sized below for the largest of the three, allocated
  // once here instead of by oneDNN on each execute.
  dnnl::primitive_attr attr;
  STOKER_DNNL(attr.set_scratchpad_mode(dnnl::scratchpad_mode::user));
  const auto fwd_desc = STOKER_DNNL(dnnl::convolution_forward::desc(
      dnnl::prop_kind::forward_training, algo, src_any, w_any, dst_any, strides, pad, pad_r));
  fwd_pd = STOKER_DNNL(dnnl::convolution_forward::primitive_desc(fwd_desc, attr, engine));
  fwd = STOKER_DNNL(dnnl::convolution_forward(fwd_pd));
  fwd_src = make_operand(engine, src_plain, fwd_pd.src_desc(), Dir::kIn);
  fwd_weights = make_operand(engine, w_plain, fwd_pd.weights_desc(), Dir::kIn);
  fwd_dst = make_operand(engine, dst_plain, fwd_pd.dst_desc(), Dir::kOut);
  fwd_args = {{DNNL_ARG_SRC, fwd_src.inner},
              {DNNL_ARG_WEIGHTS, fwd_weights.inner},
              {DNNL_ARG_DST, fwd_dst.inner}};

  if (need_din) {
    const auto bd_desc = STOKER_DNNL(
        dnnl::convolution_backward_data::desc(algo, src_any, w_any, dst_any, strides, pad, pad_r));
    bwd_data_pd =
        STOKER_DNNL(dnnl::convolution_backward_data::primitive_desc(bd_desc, attr, engine, fwd_pd));
    bwd_data = STOKER_DNNL(dnnl::convolution_backward_data(bwd_data_pd));
    bd_diff_dst = make_operand(engine, dst_plain, bwd_data_pd.diff_dst_desc(), Dir::kIn);
    bd_weights = make_operand(engine, w_plain, bwd_data_pd.weights_desc(), Dir::kIn);
    bd_diff_src = make_operand(engine, src_plain, bwd_data_pd.diff_src_desc(), Dir::kOut);
    bwd_data_args = {{DNNL_ARG_DIFF_DST, bd_diff_dst.inner},
                     {DNNL_ARG_WEIGHTS, bd_weights.inner},
                     {DNNL_ARG_DIFF_SRC, bd_diff_src.inner}};
  }

  const auto bw_desc = STOKER_DNNL(
      dnnl::convolution_backward_weights::desc(algo, src_any, w_any, dst_any, strides, pad, pad_r));
  bwd_weights_pd = STOKER_DNNL(
      dnnl::convolution_backward_weights::primitive_desc(bw_desc, attr, engine, fwd_pd));
  bwd_weights = STOKER_DNNL(dnnl::convolution_backward_weights(bwd_weights_pd));
  bw_src = make_operand(engine, src_plain, bwd_weights_pd.src_desc(), Dir::kIn);
  bw_diff_dst = make_operand(engine, dst_plain, bwd_weights_pd.diff_dst_desc(), Dir::kIn);
  bw_diff_weights = make_operand(engine, w_plain, bwd_weights_pd.diff_weights_desc(), Dir::kOut);
  bwd_weights_args = {{DNNL_ARG_SRC, bw_src.inner},
                      {DNNL_ARG_DIFF_DST, bw_diff_dst.inner},
                      {DNNL_ARG_DIFF_WEIGHTS, bw_diff_weights.inner}};

  // The three run one after another on one stream, so they share one scratchpad.
  size_t scratch_bytes = std::max(STOKER_DNNL(fwd_pd.scratchpad_desc().get_size()),
                                  STOKER_DNNL(bwd_weights_pd.scratchpad_desc().get_size()));
  if (need_din)
    scratch_bytes = std::max(scratch_bytes, STOKER_DNNL(bwd_data_pd.scratchpad_desc().get_size()));
  const memory::desc scratch_md({memory::dim(scratch_bytes)}, dt::u8, tag::x);
  scratchpad = STOKER_DNNL(memory(scratch_md, engine));
  for (auto* args : {&fwd_args, &bwd_data_args, &bwd_weights_args})
    if (!args->empty()) (*args)[DNNL_ARG_SCRATCHPAD] = scratchpad;
}

void ConvDnnl::forward(float* out, const float* in, const float* weight) {
  STOKER_CHECK(out != nullptr && in != nullptr && weight != nullptr);
  bind_in(fwd_src, in, stream);
  bind_in(fwd_weights, weight, stream);
  bind_out(fwd_dst, out);
  STOKER_DNNL(fwd.execute(stream, fwd_args));
  finish_out(fwd_dst, stream);
  STOKER_DNNL(stream.wait());
}

void ConvDnnl::backward(float* din, float* dweight, const float* dout, const float* in,
                        const float* weight) {
  STOKER_CHECK(dweight != nullptr && dout != nullptr && in != nullptr && weight != nullptr);
  STOKER_CHECK_MSG((din != nullptr) == need_din,
                   "din must be given exactly when the layer was planned with need_din");
  if (need_din) {
    bind_in(bd_diff_dst, dout, stream);
    bind_in(bd_weights, weight, stream);
    bind_out(bd_diff_src, din);
    STOKER_DNNL(bwd_data.execute(stream, bwd_data_args));
    finish_out(bd_diff_src, stream);
  }
  bind_in(bw_src, in, stream);
  bind_in(bw_diff_dst, dout, stream);
  bind_out(bw_diff_weights, dweight);
  STOKER_DNNL(bwd_weights.execute(stream, bwd_weights_args));
  finish_out(bw_diff_weights, stream);
  STOKER_DNNL(stream.wait());
}

std::string ConvDnnl::describe() const {
  std::string s = fmt::format("forward          {:<14} src {} weights {} dst {}\n",
                              fwd_pd.impl_info_str(), format_of(fwd_pd.src_desc()),
                              format_of(fwd_pd.weights_desc()), format_of(fwd_pd.dst_desc()));
  if (need_din)
    s += fmt::format("backward-data    {:<14} diff_dst {} weights {} diff_src {}\n",
                     bwd_data_pd.impl_info_str(), format_of(bwd_data_pd.diff_dst_desc()),
                     format_of(bwd_data_pd.weights_desc()), format_of(bwd_data_pd.diff_src_desc()));
  s += fmt::format("backward-weights {:<14} src {} diff_dst {} diff_weights {}\n",
                   bwd_weights_pd.impl_info_str(), format_of(bwd_weights_pd.src_desc()),
                   format_of(bwd_weights_pd.diff_dst_desc()),
                   format_of(bwd_weights_pd.diff_weights_desc()));
  return s;
}

}  // namespace stoker::cpu
