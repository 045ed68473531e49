// SPDX-License-Identifier: Apache-2.0
// Every oneDNN call goes through STOKER_DNNL: a dnnl::error (a failed status inside the C++
// API) becomes a stoker::Error naming the call, the status and oneDNN's own message. Not for
// Stoker's own invariants (STOKER_CHECK) and not a place to retry anything.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "common/error.h"

namespace stoker::cpu {

// Throws the stoker::Error for a failed oneDNN call `what`.
[[noreturn]] void dnnl_failed(const char* what, const dnnl::error& e);

// Runs f(); a dnnl::error from it is rethrown as stoker::Error naming `what`.
template <class F>
decltype(auto) dnnl_call(const char* what, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    dnnl_failed(what, e);
  }
}

}  // namespace stoker::cpu

#define STOKER_DNNL(expr) ::stoker::cpu::dnnl_call(#expr, [&]() { return expr; })
