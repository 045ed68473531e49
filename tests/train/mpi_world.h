// SPDX-License-Identifier: Apache-2.0
// The MPI collective a gtest executable run under mpirun shares across its tests: MPI starts
// once per process, so one collective is made before the first test and ended before main
// returns. Null when not launched by mpirun or built without MPI (the tests skip then).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "train/collective.h"
#include "train/parallel/collectives.h"

namespace stoker {

class MpiWorld : public ::testing::Environment {
 public:
  static Collective* get() { return collective.get(); }
  void SetUp() override {
    if (mpirun_world() && mpi_built()) collective = make_host_collective();
  }
  void TearDown() override { collective.reset(); }

 private:
  static inline std::unique_ptr<Collective> collective;
};

}  // namespace stoker
