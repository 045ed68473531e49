// SPDX-License-Identifier: Apache-2.0
// stoker.Loader(pin_memory=True): the batch pool in pinned (page-locked) host memory, so a
// non_blocking copy to the device is asynchronous. The module is built without CUDA, so the
// pinning itself is two Python callables (stoker.Loader passes torch's cudaHostRegister and
// cudaHostUnregister); this file makes them the loader's memory hook (loader/host_memory.h):
// each pool buffer pinned once when it is made, unpinned before it is freed.
#pragma once

#include <pybind11/pybind11.h>

#include "loader/host_memory.h"

namespace stoker::py {

// `pin(address, nbytes)` and `unpin(address)`, addresses as ints; an exception from `pin`
// becomes stoker::Error naming the buffer. Call with the GIL; the hooks take it themselves.
HostMemory python_pinned_memory(pybind11::object pin, pybind11::object unpin);

}  // namespace stoker::py
