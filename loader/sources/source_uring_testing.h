// SPDX-License-Identifier: Apache-2.0
// Tests only: the io_uring source's fault-injection hook (tests/loader/io_faults.cc). Not
// part of the source interface; nothing but tests includes this header.
#pragma once

#include <cstdint>
#include <string_view>

namespace stoker {

// Tests only (fault injection): every io_uring completion's result passes through `hook`
// before the source handles it, with the read's file, offset and O_DIRECT flag, so that
// -EAGAIN, short reads, an early end of file or an error reach the real handling
// deterministically. Null (the default): results as the kernel gave them.
using UringCompletionHook = int (*)(std::string_view file, uint64_t offset, bool direct, int res);
void set_uring_completion_hook(UringCompletionHook hook);

}  // namespace stoker
