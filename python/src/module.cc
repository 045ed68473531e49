// SPDX-License-Identifier: Apache-2.0
// stoker._stoker: the extension module under python/stoker. Binds LoaderCore (one loader),
// the batch lease (its images as a buffer and a DLPack capsule, its labels), the option
// conversion and the error type. The iteration protocol, state_dict and the friendly names
// live in python/stoker/__init__.py.
#include <pybind11/numpy.h>
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
using stoker::py::LoaderCore;

namespace {

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
                 stoker::LoaderConfig config = stoker::py::config_from_kwargs(kwargs);
                 if (!pin.is_none()) {
                   const auto hooks = pin.cast<std::pair<pyb::object, pyb::object>>();
                   config.memory = stoker::py::python_pinned_memory(hooks.first, hooks.second);
                 }
                 pyb::gil_scoped_release nogil;  // indexing and starting workers take a while
                 return std::make_shared<LoaderCore>(dataset, std::move(config));
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
      // Labels and dataset indices are copied: a few bytes per sample, int64 as PyTorch's
      // cross-entropy wants.
      .def_property_readonly("labels",
                             [](const BatchLease& l) {
                               const stoker::Batch& b = l.batch();
                               pyb::array_t<int64_t> a(static_cast<pyb::ssize_t>(b.size));
                               for (size_t i = 0; i < b.size; ++i) a.mutable_at(i) = b.labels[i];
                               return a;
                             })
      .def_property_readonly("indices", [](const BatchLease& l) {
        const stoker::Batch& b = l.batch();
        pyb::array_t<int64_t> a(static_cast<pyb::ssize_t>(b.size));
        for (size_t i = 0; i < b.size; ++i) a.mutable_at(i) = b.indices[i];
        return a;
      });
}
