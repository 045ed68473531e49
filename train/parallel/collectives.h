// SPDX-License-Identifier: Apache-2.0
// The Collective implementations this build has, and how a process learns which world it was
// launched in. make_host_collective() (train/collective.h) picks among these; tests and the
// all-reduce benchmark may build one directly. Not the contract itself (train/collective.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "train/collective.h"

namespace stoker {

// A world of one: rank 0, world 1, every collective a no-op.
std::unique_ptr<Collective> make_single_collective();

// MPI_COMM_WORLD (initialises MPI on first use, finalises when destroyed). stoker::Error in
// a build without MPI (STOKER_HAVE_MPI), or when MPI cannot start. `label` starts the line it
// prints when it ends the job from a wait (train/collective.h).
std::unique_ptr<Collective> make_mpi_collective(const std::string& label = "stoker");
bool mpi_built();

// What the launcher told this process before MPI started: Open MPI's mpirun sets
// OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK. Empty when not launched by mpirun.
struct LaunchWorld {
  int rank = 0;
  int world = 1;
};
std::optional<LaunchWorld> mpirun_world();
// This process's rank among those on its node (OMPI_COMM_WORLD_LOCAL_RANK), 0 when not set:
// which GPU a rank takes.
int mpirun_local_rank();

}  // namespace stoker
