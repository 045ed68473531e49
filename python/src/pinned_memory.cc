// SPDX-License-Identifier: Apache-2.0
#include "python/src/pinned_memory.h"

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "common/error.h"

namespace stoker::py {

namespace pyb = pybind11;

namespace {

// A pool may be freed at interpreter exit (a batch kept in a global), when taking the GIL is
// no longer possible: the process is ending and its pinned pages with it.
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// The two callables, shared by the hook's copies (LoaderConfig is copied without the GIL,
// so the hooks hold this by shared_ptr, not Python references of their own).
struct Hooks {
  pyb::object pin, unpin;
  Hooks() = default;
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;
  ~Hooks() {
    if (!python_alive()) {
      pin.release();  // leaked: no GIL to drop them with
      unpin.release();
      return;
    }
    pyb::gil_scoped_acquire gil;
    pin = pyb::object();
    unpin = pyb::object();
  }
};

void call_pin(const Hooks& h, void* p, size_t bytes) {
  pyb::gil_scoped_acquire gil;
  try {
    h.pin(reinterpret_cast<uintptr_t>(p), bytes);
  } catch (pyb::error_already_set& e) {
    fail("pin_memory: cannot pin a batch buffer of {} bytes at {}: {}", bytes, p, e.what());
  }
}

// From a destructor, on any thread: never throws; a failure is Python's "unraisable" report.
void call_unpin(const Hooks& h, void* p) noexcept {
  if (!python_alive()) return;
  pyb::gil_scoped_acquire gil;
  try {
    h.unpin(reinterpret_cast<uintptr_t>(p));
  } catch (pyb::error_already_set& e) {
    e.discard_as_unraisable("stoker pin_memory: unpinning a batch buffer");
  }
}

}  // namespace

HostMemory python_pinned_memory(pyb::object pin, pyb::object unpin) {
  auto h = std::make_shared<Hooks>();
  h->pin = std::move(pin);
  h->unpin = std::move(unpin);
  HostMemory m;
  m.allocate = [h](size_t bytes) {
    void* p = std::aligned_alloc(4096, bytes);  // bytes: a multiple of 4096 (BatchPool)
    if (p == nullptr) fail("cannot allocate a batch of {} bytes", bytes);
    try {
      call_pin(*h, p, bytes);
    } catch (...) {
      std::free(p);
      throw;
    }
    return p;
  };
  m.release = [h](void* p) {
    call_unpin(*h, p);
    std::free(p);
  };
  m.pin = [h](void* p, size_t bytes) { call_pin(*h, p, bytes); };
  m.unpin = [h](void* p) { call_unpin(*h, p); };
  return m;
}

}  // namespace stoker::py
