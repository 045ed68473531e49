// SPDX-License-Identifier: Apache-2.0
// CudnnNet's optimiser: the multi-tensor slots and chunks, the gradient finish, SGD and
// the weights' compute copies, the f16 loss scale, momentum flags, and data parallelism's
// gradient buckets.
#include "train/gpu/cudnn_net.h"

#include <algorithm>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {

namespace {

constexpr int64_t kChunk = 65536;  // elements per block of the multi-tensor kernels

std::vector<TensorChunk> chunks_of(const std::vector<TensorSlot>& slots,
                                   const std::vector<bool>& take) {
  std::vector<TensorChunk> out;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (!take[s]) continue;
    for (int64_t b = 0; b < slots[s].n; b += kChunk)
      out.push_back({int32_t(s), b, std::min(slots[s].n, b + kChunk)});
  }
  return out;
}

}  // namespace

void CudnnNet::plan_optimizer() {
  std::vector<bool> finish;
  for (size_t i = 0; i < net_.params.size(); ++i) {
    const Param& p = net_.params[i];
    if (!p.trainable) continue;
    GpuParam& g = params_[i];
    const Layer& l = net_.layers[size_t(p.layer)];
    TensorSlot s;
    s.value = g.value.as<float>();
    s.grad = g.grad;
    s.momentum = g.momentum.as<float>();
    s.raw = g.raw;
    s.compute = g.compute == g.value.get() ? nullptr : g.compute;
    s.n = numel(p);
    s.raw_dtype = g.raw == g.grad ? DType::f32 : dtype_;
    s.compute_dtype = dtype_;
    s.krsc = (nhwc_ && l.kind == LayerKind::conv && int(i) == l.weight) ? 1 : 0;
    if (p.shape.size() == 4) {
      s.k = int32_t(p.shape[0]);
      s.c = int32_t(p.shape[1]);
      s.rs = int32_t(p.shape[2] * p.shape[3]);
    }
    s.decay_exempt = p.shape.size() == 1 ? 1 : 0;  // as the CPU backend: BN params and biases
    g.slot = int(slots_.size());
    slots_.push_back(s);
    // f16 unscales and checks every gradient; otherwise only library gradients that are
    // not already f32 in torch's layout need a pass.
    finish.push_back(dtype_ == DType::f16 || g.raw != g.grad);
  }
  const std::vector<TensorChunk> all = chunks_of(slots_, std::vector<bool>(slots_.size(), true));
  const std::vector<TensorChunk> some = chunks_of(slots_, finish);
  chunk_count_ = int64_t(all.size());
  finish_chunk_count_ = int64_t(some.size());
  alloc(slots_dev_, slots_.size() * sizeof(TensorSlot));
  alloc(chunks_dev_, all.size() * sizeof(TensorChunk));
  alloc(finish_chunks_dev_, std::max<size_t>(1, some.size()) * sizeof(TensorChunk));
  STOKER_GPU(cudaMemcpyAsync(slots_dev_.get(), slots_.data(), slots_dev_.bytes(),
                             cudaMemcpyHostToDevice, stream_));
  STOKER_GPU(cudaMemcpyAsync(chunks_dev_.get(), all.data(), all.size() * sizeof(TensorChunk),
                             cudaMemcpyHostToDevice, stream_));
  if (!some.empty())
    STOKER_GPU(cudaMemcpyAsync(finish_chunks_dev_.get(), some.data(),
                               some.size() * sizeof(TensorChunk), cudaMemcpyHostToDevice, stream_));
  STOKER_GPU(cudaStreamSynchronize(stream_));  // the host vectors above go out of scope
}

void CudnnNet::plan_buckets() {
  // The trainable tensors in arena order, cut into buckets of at least bucket_bytes.
  std::vector<size_t> order;
  for (size_t i = 0; i < net_.params.size(); ++i)
    if (net_.params[i].trainable) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [this](size_t a, size_t b) { return params_[a].grad < params_[b].grad; });
  const size_t limit = std::max<size_t>(1, config_.bucket_bytes / sizeof(float));
  std::vector<TensorChunk> chunks;
  Bucket open;
  bool empty = true;
  const auto close = [&] {
    open.chunk_count = int64_t(chunks.size()) - open.chunk_begin;
    buckets_.push_back(std::move(open));
    empty = true;
  };
  for (size_t i : order) {
    const GpuParam& g = params_[i];
    const size_t offset = size_t(g.grad - grad_arena_.as<float>());
    if (empty) {
      open = Bucket{.offset = offset,
                    .last_op = int(lowering_.ops.size()),
                    .chunk_begin = int64_t(chunks.size())};
      empty = false;
    }
    // Complete once the backward, running the ops from the last, has run the first op that
    // writes one of its gradients.
    open.last_op = std::min(open.last_op, lowering_.op_of_layer[size_t(net_.params[i].layer)]);
    open.floats = offset + (size_t(numel(net_.params[i])) + 63) / 64 * 64 - open.offset;
    // The same finish pass as without buckets, tensor by tensor (plan_optimizer's rule).
    if (dtype_ == DType::f16 || g.raw != g.grad) {
      std::vector<bool> take(slots_.size(), false);
      take[size_t(g.slot)] = true;
      const std::vector<TensorChunk> mine = chunks_of(slots_, take);
      chunks.insert(chunks.end(), mine.begin(), mine.end());
    }
    if (open.floats >= limit) close();
  }
  if (!empty) close();
  STOKER_CHECK(!buckets_.empty() &&
               buckets_.back().offset + buckets_.back().floats == grad_floats_);
  alloc(bucket_chunks_dev_, std::max<size_t>(1, chunks.size()) * sizeof(TensorChunk));
  if (!chunks.empty())
    STOKER_GPU(cudaMemcpyAsync(bucket_chunks_dev_.get(), chunks.data(),
                               chunks.size() * sizeof(TensorChunk), cudaMemcpyHostToDevice,
                               stream_));
  STOKER_GPU(cudaStreamCreateWithFlags(comm_.out(), cudaStreamNonBlocking));
  for (Bucket& b : buckets_)
    STOKER_GPU(cudaEventCreateWithFlags(b.ready.out(), cudaEventDisableTiming));
  STOKER_GPU(cudaEventCreateWithFlags(reduced_.out(), cudaEventDisableTiming));
  STOKER_GPU(cudaStreamSynchronize(stream_));  // `chunks` goes out of scope
}

// Bucket b's gradients are all written: finish them (cast, layout, unscale) on the compute
// stream, then fork the communication stream from there and start their sum over the ranks.
void CudnnNet::start_bucket(size_t b) {
  const Bucket& k = buckets_[b];
  if (k.chunk_count > 0)
    finish_gradients(slots_dev_.as<TensorSlot>(),
                     bucket_chunks_dev_.as<TensorChunk>() + k.chunk_begin, k.chunk_count,
                     dtype_ == DType::f16 ? loss_scale_device() : nullptr, nonfinite_flag(),
                     stream_);
  STOKER_GPU(cudaEventRecord(k.ready, stream_));
  STOKER_GPU(cudaStreamWaitEvent(comm_, k.ready, 0));
  config_.collective->allreduce_sum(grad_arena_.as<float>() + k.offset, k.floats,
                                    CollectiveMemory{.device = true, .stream = comm_.get()});
}

// The compute stream waits for every bucket's sum, then makes it the mean (what the update and
// gradients() see). Each rank scales the same bits by the same factor: identical results.
void CudnnNet::join_buckets() {
  STOKER_GPU(cudaEventRecord(reduced_, comm_));
  STOKER_GPU(cudaStreamWaitEvent(stream_, reduced_, 0));
  const float mean = 1.0f / float(config_.collective->world());
  STOKER_GPU(cublasSscal_64(cublas_, int64_t(grad_floats_), &mean, grad_arena_.as<float>(), 1));
}

int32_t* CudnnNet::nonfinite_flag() const {
  return skips_nonfinite_step(config_.precision) ? overflow_.as<int32_t>() : nullptr;
}

void CudnnNet::reset_loss_scale() {
  set_loss_scale(LossScale{});
}

void CudnnNet::set_loss_scale(const LossScale& scale) {
  LossScale s = scale;
  if (dtype_ != DType::f16) s = LossScale{.scale = 1.0f};  // no scaling
  upload(scale_.get(), &s, sizeof(s));
}

LossScale CudnnNet::loss_scale() const {
  LossScale s;
  download(&s, scale_.get(), sizeof(s));
  return s;
}

bool CudnnNet::has_momentum(int i) const {
  const int slot = params_[size_t(i)].slot;
  if (slot < 0) return false;
  TensorSlot s;
  download(&s, slots_dev_.as<TensorSlot>() + slot, sizeof(s));
  return s.has_momentum != 0;
}

void CudnnNet::set_momentum_flags(const std::vector<bool>& flags) {
  STOKER_CHECK(flags.size() == params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].slot >= 0) slots_[size_t(params_[i].slot)].has_momentum = flags[i] ? 1 : 0;
  upload(slots_dev_.get(), slots_.data(), slots_dev_.bytes());
}

void CudnnNet::update() {
  sgd_and_cast(slots_dev_.as<TensorSlot>(), chunks_dev_.as<TensorChunk>(), chunk_count_,
               hyper_device(), overflow_.as<int32_t>(), true, stream_);
  finish_step(slots_dev_.as<TensorSlot>(), int32_t(slots_.size()), hyper_device(),
              overflow_.as<int32_t>(), loss_scale_device(), dtype_ == DType::f16, skipped_device(),
              stream_);
}

void CudnnNet::cast_weights() {
  sgd_and_cast(slots_dev_.as<TensorSlot>(), chunks_dev_.as<TensorChunk>(), chunk_count_,
               hyper_device(), nullptr, false, stream_);
}

}  // namespace stoker::gpu
