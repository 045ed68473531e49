// SPDX-License-Identifier: Apache-2.0
#include "python/src/batch_export.h"

#include <dlpack/dlpack.h>

#include <array>
#include <vector>

namespace stoker::py {

namespace {

std::array<int64_t, 4> images_shape(const Batch& b) {
  const int64_t n = static_cast<int64_t>(b.size), h = b.spec.height, w = b.spec.width;
  if (b.spec.layout == Layout::nchw) return {n, 3, h, w};
  return {n, h, w, 3};
}

// What a DLPack consumer holds: the tensor description, its shape, and the lease.
struct Exported {
  DLManagedTensor managed{};
  std::array<int64_t, 4> shape{};
  std::shared_ptr<BatchLease> lease;
};

void delete_exported(DLManagedTensor* t) {
  delete static_cast<Exported*>(t->manager_ctx);
}

// The capsule's own destructor: a capsule nobody consumed still owns its tensor. A consumer
// renames it ("used_dltensor") and calls the deleter itself.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t && t->deleter) t->deleter(t);
}

}  // namespace

pybind11::buffer_info images_buffer(const BatchLease& lease) {
  const Batch& b = lease.batch();
  const std::array<int64_t, 4> shape = images_shape(b);
  const auto item = static_cast<pybind11::ssize_t>(b.spec.element_bytes());
  std::vector<pybind11::ssize_t> dims(shape.begin(), shape.end()), strides(4);
  pybind11::ssize_t stride = item;
  for (int d = 3; d >= 0; --d) {
    strides[d] = stride;
    stride *= dims[d];
  }
  const std::string format = b.spec.dtype == DType::f32
                                 ? pybind11::format_descriptor<float>::format()
                                 : pybind11::format_descriptor<uint8_t>::format();
  return pybind11::buffer_info(b.data, item, format, 4, dims, strides, /*readonly=*/false);
}

pybind11::buffer_info int64s_buffer(const Int64s& v) {
  const auto item = static_cast<pybind11::ssize_t>(sizeof(int64_t));
  // const_cast: the buffer is exported read-only (the last argument), nothing writes to it.
  return pybind11::buffer_info(const_cast<int64_t*>(v.values.data()), item,
                               pybind11::format_descriptor<int64_t>::format(), 1,
                               {static_cast<pybind11::ssize_t>(v.values.size())}, {item},
                               /*readonly=*/true);
}

pybind11::object images_dlpack(std::shared_ptr<BatchLease> lease) {
  const Batch& b = lease->batch();
  auto* e = new Exported;
  e->shape = images_shape(b);
  e->lease = std::move(lease);
  DLTensor& t = e->managed.dl_tensor;
  t.data = b.data;
  t.device = {kDLCPU, 0};
  t.ndim = 4;
  t.dtype = b.spec.dtype == DType::f32 ? DLDataType{kDLFloat, 32, 1} : DLDataType{kDLUInt, 8, 1};
  t.shape = e->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", capsule_destructor);
  if (capsule == nullptr) {
    delete e;
    throw pybind11::error_already_set();
  }
  return pybind11::reinterpret_steal<pybind11::object>(capsule);
}

}  // namespace stoker::py
