// SPDX-License-Identifier: Apache-2.0
// make_mpi_collective() in a build without MPI: a clear error, so that callers need no #if.
#include "common/error.h"
#include "train/parallel/collectives.h"

namespace stoker {

bool mpi_built() {
  return false;
}

std::unique_ptr<Collective> make_mpi_collective(const std::string&) {
  fail(
      "this stoker was built without MPI (Open MPI not found at configure time; Debian: "
      "libopenmpi-dev)");
}

}  // namespace stoker
