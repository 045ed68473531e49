#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: 2 ranks at per-rank batch b with synchronised batch norm must train like one
# process at batch 2b on the same samples. data_parallel_driver runs both in Stoker (under
# mpirun), teacher-forced: step k of both runs starts from the same state, so each step is a
# comparison of its own. torchvision's ResNet-18 runs the same step from the same state here.
#
# Why per step, and why this bound: the two Stoker runs are two fp32 orderings of the same
# sums (BN statistics and gradients split over ranks, the global gradient as a mean of two).
# Over several chained steps that comparison is ill-conditioned: a ReLU input within rounding
# of zero takes the other side in one run, its gradient element flips, and momentum carries the
# flip on (seen: 6% of a conv's momentum after 4 steps on one CPU, 2e-5 on another). From one
# shared state the step is a well-posed function of its inputs, and torch shows how far fp32
# may move it: the same step in fp32 with the global batch in other orders (the same sums,
# other roundings: what splitting over ranks does) and against fp64. Held, per step:
#   |loss_2rank - loss_1proc|            <= C * torch's own loss spread (at least 1 ulp)
#   max_t err(state_2rank[t], state_1proc[t]) <= C * torch's own state spread
# with err = max|a - b| / max|b| per tensor (parameters, running statistics, momentum), torch's
# spread = max(fp32 vs fp64, each reordered fp32 vs fp32), and C = 4: Stoker's oneDNN kernels
# round differently from torch's, about as much again, and a factor 2 covers which tensor rounds
# luckiest. A sync-BN bug (local statistics, a missing all-reduce in the backward) moves every
# BN layer's output or gradients by percents: 1,000x and more over the bound.
# Sanity: Stoker's one-process step stays within 1e-4 of torch fp64 in the loss; its state
# error against fp64 is printed, not held (the CPU backend's own oracle is backend_vs_torch.py).
# Exit 77 (skip; tests/skip_policy.py) without torch.
#
#   data_parallel_vs_torch.py MPIRUN_LOCAL DRIVER
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    import torchvision
except Exception as e:  # noqa: BLE001 - no oracle here
    skip(f"torch/torchvision are not importable ({e}); install python3-torch python3-torchvision")

from safetensors_io import read_safetensors  # noqa: E402

C = 4.0
STEPS, PER_RANK, LR, MOMENTUM, WD = 4, 4, 0.05, 0.9, 1e-4
REORDERS = 4  # torch fp32 runs of each step with the global batch permuted
mpirun, driver = sys.argv[1], sys.argv[2]
torch.set_num_threads(2)


def torch_step(start, images, labels, dtype):
    """One SGD step from `start` (state_dict + optim.momentum.*): loss, state after."""
    model = torchvision.models.resnet18(num_classes=10)
    model.load_state_dict({k: v for k, v in start.items() if not k.startswith("optim.")},
                          strict=True)
    model = model.to(dtype).train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    for name, p in model.named_parameters():
        buf = start.get("optim.momentum." + name)
        if buf is not None:
            opt.state[p]["momentum_buffer"] = buf.to(dtype).clone()
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(images.to(dtype)), labels)
    loss.backward()
    opt.step()
    out = {k: v.detach().clone() for k, v in model.state_dict().items()
           if not k.endswith("num_batches_tracked")}
    for name, p in model.named_parameters():
        out["optim.momentum." + name] = opt.state[p]["momentum_buffer"].detach().clone()
    return loss.item(), out


def err(got, ref):
    ref = ref.to(torch.float64)
    scale = ref.abs().max().item()
    return (got.to(torch.float64) - ref).abs().max().item() / (scale if scale > 0 else 1.0)


def state_error(a, b):
    worst, where = 0.0, ""
    for k in b:
        e = err(a[k], b[k])
        if e > worst:
            worst, where = e, k
    return worst, where


def check_step(k, data):
    """Returns failure messages for step k (and prints its line)."""
    start = {n[6:]: t for n, t in data.items() if n.startswith("start.")}
    images, labels = data["images"], data["labels"].long()
    l64, s64 = torch_step(start, images, labels, torch.float64)
    l32, s32 = torch_step(start, images, labels, torch.float32)
    loss_torch = abs(l32 - l64)
    state_torch, where_torch = state_error(s32, s64)
    gen = torch.Generator().manual_seed(1000 + k)
    for _ in range(REORDERS):
        p = torch.randperm(len(labels), generator=gen)
        lp, sp = torch_step(start, images[p], labels[p], torch.float32)
        loss_torch = max(loss_torch, abs(lp - l32))
        e, where = state_error(sp, s32)
        if e > state_torch:
            state_torch, where_torch = e, where
    # A scalar's spread is resolved in whole ulps at best: a few fp32 runs that happen to land
    # within one ulp of fp64 do not show that fp32 holds the loss closer than its own spacing
    # (on an AVX-512 Zen 4 the 2-rank and 1-process losses of step 3 differ by 3 ulps, 7.2e-7
    # at 2.4, where torch's 5 runs spread 0.6 ulp; with oneDNN capped at AVX2 they agree).
    t32 = torch.tensor(l32, dtype=torch.float32)
    loss_ulp = (torch.nextafter(t32.abs(), torch.tensor(float("inf"))) - t32.abs()).item()
    loss_torch = max(loss_torch, loss_ulp)
    keys = list(s64)
    dp = {n: data["dp." + n] for n in keys}
    one = {n: data["one." + n] for n in keys}
    dp_loss, one_loss = data["dp.loss"].item(), data["one.loss"].item()
    loss_stoker = abs(dp_loss - one_loss)
    state_stoker, where_stoker = state_error(dp, one)
    sanity, where_sanity = state_error(one, s64)
    sanity_loss = abs(one_loss - l64)
    print(f"step {k}: loss {one_loss:.6f} (torch fp64 {l64:.6f}); "
          f"loss |2 ranks - 1 process| {loss_stoker:.3g} <= {C} x {loss_torch:.3g}; "
          f"state {state_stoker:.3g} ({where_stoker}) <= {C} x {state_torch:.3g} ({where_torch}); "
          f"1 process vs torch fp64 {sanity:.3g} ({where_sanity})")
    failures = []
    if loss_stoker > C * loss_torch:
        failures.append(f"step {k}: loss differs by {loss_stoker:.3g} > {C} x {loss_torch:.3g}")
    if state_stoker > C * state_torch:
        failures.append(f"step {k}: state differs by {state_stoker:.3g} ({where_stoker}) > "
                        f"{C} x {state_torch:.3g}")
    if sanity_loss > 1e-4:
        failures.append(f"step {k}: stoker's one-process loss is off torch fp64 by {sanity_loss:.3g}")
    return failures


failures = []
with tempfile.TemporaryDirectory() as tmp:
    run = subprocess.run([mpirun, "2", driver, tmp, str(STEPS), str(PER_RANK), str(LR)],
                         capture_output=True, text=True, timeout=400)
    if run.returncode != 0:
        sys.exit(f"FAIL: the driver under mpirun exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
    print(run.stdout.strip())
    for k in range(STEPS):
        failures += check_step(k, read_safetensors(os.path.join(tmp, f"step{k}.safetensors"))[1])
if failures:
    sys.exit("FAIL: " + "; ".join(failures))
print("ok: 2 ranks with sync BN take every step as one process at the global batch does, "
      "within torch's own fp32 spread")
