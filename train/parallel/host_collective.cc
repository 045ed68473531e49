// SPDX-License-Identifier: Apache-2.0
// make_host_collective(): the world this process was launched in. mpirun announces itself
// through its environment before MPI starts, so a build without MPI can refuse clearly
// instead of training N unrelated copies of the same model.
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 24)) fail("{}={}: expected a rank or world size", name, v);
  return int(x);
}

}  // namespace

std::optional<LaunchWorld> mpirun_world() {
  std::optional<int> world = env_int("OMPI_COMM_WORLD_SIZE");
  if (!world) return std::nullopt;
  return LaunchWorld{env_int("OMPI_COMM_WORLD_RANK").value_or(0), *world};
}

int mpirun_local_rank() {
  return env_int("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0);
}

std::unique_ptr<Collective> make_host_collective(const std::string& label) {
  std::optional<LaunchWorld> launched = mpirun_world();
  if (!launched) return make_single_collective();
  if (!mpi_built())
    fail(
        "launched by mpirun (OMPI_COMM_WORLD_SIZE={}) but this stoker was built without MPI: "
        "each rank would train alone; rebuild with Open MPI (Debian: libopenmpi-dev) or run "
        "without mpirun",
        launched->world);
  return make_mpi_collective(label);
}

}  // namespace stoker
