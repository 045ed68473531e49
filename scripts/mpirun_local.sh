#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mpirun for N ranks on this machine, as the tests and the all-reduce benchmark need it, in
# one place: root allowed (containers and CI run as root), more ranks than cores allowed (CI
# has two), shared memory between ranks without cross-memory attach (a container may forbid
# process_vm_readv; set OMPI_MCA_btl_vader_single_copy_mechanism=cma where it is allowed,
# for speed), no network transport probed. Not for clusters: there, call mpirun.
#   scripts/mpirun_local.sh N PROGRAM [ARGS...]
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 RANKS PROGRAM [ARGS...]" >&2
  exit 2
fi
ranks=$1
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# Idle ranks yield the core instead of busy-polling: on a machine with fewer cores than ranks
# x threads, the polling communication thread otherwise takes the backward's core.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
# After a rank fails, mpirun SIGTERMs the others and SIGKILLs them this many seconds later:
# time for each to finish its step, say why it stopped and (on Ctrl-C) save (default 1 s).
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-10}
# --bind-to none: oversubscribed ranks bound to one core each would share it badly.
exec mpirun -np "$ranks" --oversubscribe --bind-to none --mca btl self,vader \
  --mca plm_rsh_agent false "$@"
