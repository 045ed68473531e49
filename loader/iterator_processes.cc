// SPDX-License-Identifier: Apache-2.0
// processes:N (placeholder until the process pool lands).
#include "common/error.h"
#include "loader/producer.h"

namespace stoker {

std::unique_ptr<Producer> make_processes_producer(LoaderContext&, int) {
  fail("processes:N is not available in this build yet");
}

}  // namespace stoker
