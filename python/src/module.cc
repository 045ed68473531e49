// SPDX-License-Identifier: Apache-2.0
// stoker._stoker: the extension module under python/stoker. Binds LoaderCore (one loader),
// the batch lease (its images as a buffer and a DLPack capsule, its labels), the option
// conversion and the error type. The iteration protocol, state_dict and the friendly names
// live in python/stoker/__init__.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/error.h"
#include "python/src/batch_export.h"
#include "python/src/loader_core.h"
#include "python/src/loader_kwargs.h"
#include "python/src/log_bridge.h"
#include "python/src/pinned_memory.h"

namespace pyb = pybind11;
using stoker::py::BatchLease;
using stoker::py::Int64s;
using stoker::py::LoaderCore;

namespace {

// The batch's labels (or indices): one int64 per sample.
template <typename T>
Int64s copy_ints(const T* values, size_t n) {
  Int64s out;
  out.values.assign(values, values + n);
  return out;
}

[[noreturn]] void buffer_error(const char* what) {
  PyErr_SetString(PyExc_BufferError, what);
  throw pyb::error_already_set();
}

}  // namespace

PYBIND11_MODULE(_stoker, m) {
  m.doc() = "Stoker's C++ loader (use stoker.Loader, not this module)";
  m.attr("__version__") = STOKER_VERSION;
  // stoker::Error (bad input or environment; the message names the file and the reason).
  pyb::register_exception<stoker::Error>(m, "Error", PyExc_RuntimeError);

  m.def("default_kwargs", &stoker::py::default_kwargs);
  // The library's warnings go to Python's logging (python/src/log_bridge.h), not stderr.
  stoker::py::install_log_sink();
  m.def("drain_log", &stoker::py::drain_log);
  m.def("cli_names", &stoker::py::cli_names);
  m.def("idle_rules", &stoker::py::idle_rules_table);
  m.def("option_rows", &stoker::py::option_rows);

  pyb::class_<LoaderCore, std::shared_ptr<LoaderCore>>(m, "LoaderCore")
      // pin: None, or (pin(address, nbytes), unpin(address)) for the pool's buffers
      // (python/src/pinned_memory.h).
      .def(pyb::init(
               [](const std::string& dataset, const pyb::dict& kwargs, const pyb::object& pin) {
                 stoker::py::LoaderArgs args = stoker::py::loader_args(kwargs);
                 if (!pin.is_none()) {
                   const auto hooks = pin.cast<std::pair<pyb::object, pyb::object>>();
                   args.config.memory = stoker::py::python_pinned_memory(hooks.first, hooks.second);
                 }
                 pyb::gil_scoped_release nogil;  // indexing and starting workers take a while
                 return std::make_shared<LoaderCore>(dataset, std::move(args.config), args.tune);
               }),
           pyb::arg("dataset"), pyb::arg("kwargs"), pyb::arg("pin") = pyb::none())
      .def("start", &LoaderCore::start, pyb::arg("epoch"), pyb::arg("position"))
      .def("next", &LoaderCore::next)
      .def("position",
           [](const LoaderCore& c) {
             const stoker::Position p = c.position();
             return pyb::make_tuple(p.epoch, p.index);
           })
      .def("batches_per_epoch", &LoaderCore::batches_per_epoch)
      .def("dataset_size", &LoaderCore::dataset_size)
      .def("classes", &LoaderCore::classes)
      .def("empty_classes", &LoaderCore::empty_classes)
      .def("held", &LoaderCore::held)
      .def("pool_batches", &LoaderCore::pool_batches)
      .def("pool_bytes", &LoaderCore::pool_bytes)
      .def("stats_json", &LoaderCore::stats_json);

  pyb::class_<BatchLease, std::shared_ptr<BatchLease>>(m, "BatchImages", pyb::buffer_protocol())
      .def_buffer([](const BatchLease& l) { return stoker::py::images_buffer(l); })
      // The array API's keywords: max_version (a legacy 0.x capsule is an allowed answer),
      // dl_device (the CPU only), copy (never: not copying is the point).
      .def(
          "__dlpack__",
          [](std::shared_ptr<BatchLease> l, const pyb::object& stream, const pyb::object&,
             const pyb::object& dl_device, const pyb::object& copy) {
            if (!stream.is_none() && !(PyLong_Check(stream.ptr()) && stream.cast<long>() == -1))
              throw pyb::value_error("stream: a CPU tensor takes no stream");
            if (!dl_device.is_none() && !dl_device.equal(pyb::make_tuple(1, 0)))
              buffer_error("dl_device: the batch is in CPU memory, (1, 0)");
            if (!copy.is_none() && copy.cast<bool>())
              buffer_error("copy=True: stoker hands batches out without a copy");
            return stoker::py::images_dlpack(std::move(l));
          },
          pyb::kw_only(), pyb::arg("stream") = pyb::none(), pyb::arg("max_version") = pyb::none(),
          pyb::arg("dl_device") = pyb::none(), pyb::arg("copy") = pyb::none())
      .def("__dlpack_device__", [](const BatchLease&) { return pyb::make_tuple(1, 0); })
      .def_property_readonly("size", [](const BatchLease& l) { return l.batch().size; })
      .def_property_readonly("epoch", [](const BatchLease& l) { return l.batch().epoch; })
      .def_property_readonly("number", [](const BatchLease& l) { return l.batch().number; })
      .def_property_readonly("checksum", [](const BatchLease& l) { return l.batch().checksum; })
      // Labels and dataset indices are copied: a few bytes per sample (Int64s, through the
      // buffer protocol; python/src/batch_export.h says why not pybind11's NumPy arrays).
      .def_property_readonly("labels",
                             [](const BatchLease& l) {
                               const stoker::Batch& b = l.batch();
                               return copy_ints(b.labels.data(), b.size);
                             })
      .def_property_readonly("indices", [](const BatchLease& l) {
        const stoker::Batch& b = l.batch();
        return copy_ints(b.indices.data(), b.size);
      });

  pyb::class_<Int64s>(m, "Int64s", pyb::buffer_protocol())
      .def_buffer([](const Int64s& v) { return stoker::py::int64s_buffer(v); })
      .def("__len__", [](const Int64s& v) { return v.values.size(); });
  // Python's ints exported as the labels are: stoker/__init__.py checks at import that NumPy
  // (and torch) read them back exactly, whatever their versions and pybind11's.
  m.def("int64s_probe", [](std::vector<int64_t> values) { return Int64s{std::move(values)}; });
  m.attr("pybind11_version") = std::to_string(PYBIND11_VERSION_MAJOR) + "." +
                               std::to_string(PYBIND11_VERSION_MINOR) + "." +
                               std::to_string(PYBIND11_VERSION_PATCH);
}
