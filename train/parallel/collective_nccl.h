// SPDX-License-Identifier: Apache-2.0
// The Collective between GPUs: NCCL over one communicator per rank, its ranks those of the host
// collective (MPI) the process was launched in. Device memory only, work enqueued on the
// caller's CUDA stream; the host collective stays for host-side agreement (state broadcast,
// votes). Built with the CUDA toolkit and NCCL (STOKER_HAVE_NCCL); not a transport of our own.
#pragma once

#include <memory>

#include "train/collective.h"

namespace stoker {

// A communicator on CUDA device `device` over `host`'s ranks: rank 0 makes NCCL's unique id,
// `host` broadcasts it, every rank joins (collective: every rank must call this). `host`
// outlives the result; abort() ends the job through it. stoker::Error naming the rank and
// NCCL's reason when the device or NCCL cannot start.
std::unique_ptr<Collective> make_device_collective(Collective& host, int device);

}  // namespace stoker
