#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: 2 ranks at per-rank batch b with synchronised batch norm must train like one
# process at batch 2b on the same samples. data_parallel_driver runs both in Stoker (under
# mpirun), teacher-forced: step k of both runs starts from the same state, so each step is a
# comparison of its own. torchvision's ResNet-18 runs the same step from the same state here.
#
# Why per step, and why this bound: the two Stoker runs are two fp32 orderings of the same
# sums (BN statistics and gradients split over ranks, the global gradient as a mean of two).
# Over several chained steps that comparison is ill-conditioned, so each step starts from one
# shared state, and torch shows how far fp32 may move it: the same step in fp32 with the global
# batch in other orders (the same sums, other roundings: what splitting over ranks does) and
# against fp64. Held, per step:
#   |loss_2rank - loss_1proc|            <= C * torch's own loss spread (at least 1 ulp)
#   every ReLU's pre-activations, where both runs' outputs are positive (there they are the
#   pre-activations): max |2rank - 1proc| <= C * torch's own spread on that ReLU's input
#   max_t err(state_2rank[t], state_1proc[t]) <= C * torch's own state spread
# with err = max|a - b| / max|b| per tensor (parameters, running statistics, momentum), torch's
# spread = max(fp32 vs fp64, each reordered fp32 vs fp32), and C = 4: Stoker's oneDNN kernels
# round differently from torch's, about as much again, and a factor 2 covers which tensor rounds
# luckiest.
# Even one step is ill-conditioned where a ReLU input lies within rounding of zero: it takes
# the other side in one run, its gradient element flips, and batch norm's backward spreads the
# flip over its whole channel and everything upstream (issue 40: on a Sapphire Rapids, step 2's
# layer2.1.relu1 input [0, 3, 1, 1] is 2.36e-6 in torch fp64, 5.96e-8 in the 1-process run and
# <= 0 in the 2-rank run, where torch's own fp32 spread on that input is 3.2e-6; the momentum of
# layer2.1.conv1 then differed by 0.255 of its largest value). So a flip is allowed only where
# the positive side lies within C * torch's spread of zero, and then the parameters upstream of
# that ReLU (and their momentum) are not compared on that step; the rest are held as above, and
# the count of pairs held is printed. A flip farther from zero fails: it is not rounding.
# A sync-BN bug (local statistics, a missing all-reduce in the backward) moves every BN
# layer's output or gradients by percents: 1,000x and more over the bound.
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
SHOWN = 5  # ReLU flips printed per step
mpirun, driver = sys.argv[1], sys.argv[2]
torch.set_num_threads(2)


def relu_name(module, call):
    """Stoker's name of a ReLU call: the stem's "relu"; a block's one module runs twice, as
    Stoker's relu1 (after bn1) and relu2 (after the add)."""
    return module if module == "relu" else f"{module}{call + 1}"


def torch_step(start, images, labels, dtype):
    """One SGD step from `start` (state_dict + optim.momentum.*): loss, state after, and
    every ReLU's input (its pre-activation) by Stoker's layer name."""
    model = torchvision.models.resnet18(num_classes=10)
    model.load_state_dict({k: v for k, v in start.items() if not k.startswith("optim.")},
                          strict=True)
    model = model.to(dtype).train()
    pre, calls = {}, {}

    def keep(name):
        def hook(_module, inputs):  # before the in-place ReLU overwrites its input
            k = calls.get(name, 0)
            calls[name] = k + 1
            pre[relu_name(name, k)] = inputs[0].detach().clone()
        return hook

    for name, m in model.named_modules():
        if isinstance(m, torch.nn.ReLU):
            m.register_forward_pre_hook(keep(name))
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
    return loss.item(), out, pre


def err(got, ref):
    ref = ref.to(torch.float64)
    scale = ref.abs().max().item()
    return (got.to(torch.float64) - ref).abs().max().item() / (scale if scale > 0 else 1.0)


def state_error(a, b, keys):
    worst, where = 0.0, ""
    for k in keys:
        e = err(a[k], b[k])
        if e > worst:
            worst, where = e, k
    return worst, where


def module_order():
    """torchvision's modules that own parameters, in registration order (a block's conv1,
    bn1, conv2, bn2, then its downsample)."""
    model = torchvision.models.resnet18(num_classes=10)
    return [n for n, m in model.named_modules() if list(m.parameters(recurse=False))]


MODULES = module_order()


def upstream_of(relu):
    """The modules whose parameters' gradients flow back through ReLU `relu`: its batch norm
    and every module before it (a block's relu2, after the add: the whole block)."""
    if relu == "relu":
        last = "bn1"
    elif relu.endswith("relu1"):
        last = relu[:-len("relu1")] + "bn1"
    else:
        block = relu[:-len("relu2")]
        last = [m for m in MODULES if m.startswith(block)][-1]
    return set(MODULES[:MODULES.index(last) + 1])


def owner(key):
    """The module a state key belongs to ("optim.momentum.layer1.0.conv1.weight" -> "layer1.0.conv1")."""
    return key.removeprefix("optim.momentum.").rsplit(".", 1)[0]


def torch_spread(start, images, labels, k):
    """torch's own fp32 spread on this step: the loss, the state (worst tensor) and each ReLU's
    pre-activation (largest absolute difference), over fp32 against fp64 and fp32 in other
    batch orders against fp32; with fp64's loss, state and pre-activations."""
    l64, s64, p64 = torch_step(start, images, labels, torch.float64)
    l32, s32, p32 = torch_step(start, images, labels, torch.float32)
    loss = abs(l32 - l64)
    state, where = state_error(s32, s64, s64)
    pre = {r: (p32[r].double() - p64[r]).abs().max().item() for r in p64}
    gen = torch.Generator().manual_seed(1000 + k)
    for _ in range(REORDERS):
        p = torch.randperm(len(labels), generator=gen)
        lp, sp, pp = torch_step(start, images[p], labels[p], torch.float32)
        loss = max(loss, abs(lp - l32))
        e, w = state_error(sp, s32, s32)
        if e > state:
            state, where = e, w
        back = torch.argsort(p)  # sample i of the reordered batch is p[i]
        for r in pre:
            pre[r] = max(pre[r], (pp[r][back] - p32[r]).abs().max().item())
    # A scalar's spread is resolved in whole ulps at best: a few fp32 runs that happen to land
    # within one ulp of fp64 do not show that fp32 holds the loss closer than its own spacing
    # (on an AVX-512 Zen 4 the 2-rank and 1-process losses of step 3 differ by 3 ulps, 7.2e-7
    # at 2.4, where torch's 5 runs spread 0.6 ulp; with oneDNN capped at AVX2 they agree).
    t32 = torch.tensor(l32, dtype=torch.float32)
    loss = max(loss, (torch.nextafter(t32.abs(), torch.tensor(float("inf"))) - t32.abs()).item())
    return (l64, s64, p64), (loss, state, where, pre)


def compare_relus(k, data, p64, pre_spread):
    """Both runs' ReLU outputs, layer by layer: where both are positive they are the
    pre-activations and must agree within C x torch's spread on that layer; where exactly one
    is positive (a flip) its value must lie within that bound of zero. Returns the failures and
    the flips as (layer, index, positive run, its value, fp64 pre-activation), and the worst
    pre-activation difference as a share of its bound."""
    failures, flips, worst = [], [], (0.0, "")
    for r, ref in p64.items():
        dp = data["relu.dp." + r].double().reshape(ref.shape)
        one = data["relu.one." + r].double().reshape(ref.shape)
        bound = C * pre_spread[r]
        both = (dp > 0) & (one > 0)
        diff = (dp - one).abs()[both].max().item() if both.any() else 0.0
        worst = max(worst, (diff / bound if bound > 0 else 0.0, r))
        if diff > bound:
            failures.append(f"step {k}: {r}'s pre-activations differ by {diff:.3g} > {C} x "
                            f"{pre_spread[r]:.3g} (torch's own spread there)")
        far = []
        for idx in ((dp > 0) != (one > 0)).nonzero().tolist():
            i = tuple(idx)
            side = max(dp[i].item(), one[i].item())
            flips.append((r, i, "2 ranks" if dp[i] > 0 else "1 process", side, ref[i].item()))
            if side > bound:
                far.append((side, i))
        if far:
            side, i = max(far)
            failures.append(f"step {k}: {r}: {len(far)} inputs are > 0 in one run and <= 0 in "
                            f"the other, up to {side:.3g} ({list(i)}), beyond {C} x "
                            f"{pre_spread[r]:.3g} of zero: not rounding")
    return failures, flips, worst


def check_step(k, data):
    """Returns failure messages for step k (and prints its lines)."""
    start = {n[6:]: t for n, t in data.items() if n.startswith("start.")}
    images, labels = data["images"], data["labels"].long()
    (l64, s64, p64), (loss_torch, state_torch, where_torch, pre_spread) = \
        torch_spread(start, images, labels, k)
    failures, flips, (pre_share, pre_where) = compare_relus(k, data, p64, pre_spread)
    # A flip changes its ReLU's gradient, and with it every gradient upstream of it (batch
    # norm's backward spreads it over the whole channel): those parameters and their momentum
    # are not comparable on this step. The rest (what lies downstream, the running statistics)
    # is held as before.
    upstream = set().union(*(upstream_of(f[0]) for f in flips))
    held = [n for n in s64 if "running_" in n or owner(n) not in upstream]
    for r, i, positive, value, ref in flips[:SHOWN]:
        print(f"step {k}: ReLU flip at {r}{list(i)}: {value:.3g} in the {positive} run, <= 0 in "
              f"the other; torch fp64 {ref:.3g}; bound {C} x {pre_spread[r]:.3g}")
    if len(flips) > SHOWN:
        print(f"step {k}: ... and {len(flips) - SHOWN} more ReLU flips")
    dp = {n: data["dp." + n] for n in s64}
    one = {n: data["one." + n] for n in s64}
    dp_loss, one_loss = data["dp.loss"].item(), data["one.loss"].item()
    loss_stoker = abs(dp_loss - one_loss)
    state_stoker, where_stoker = state_error(dp, one, held)
    sanity, where_sanity = state_error(one, s64, s64)
    worst_pre = max(pre_spread, key=pre_spread.get)
    print(f"step {k}: loss {one_loss:.6f} (torch fp64 {l64:.6f}); "
          f"loss |2 ranks - 1 process| {loss_stoker:.3g} <= {C} x {loss_torch:.3g}; "
          f"state {state_stoker:.3g} ({where_stoker}; {len(held)} of {len(s64)} tensors held) "
          f"<= {C} x {state_torch:.3g} ({where_torch}); pre-activations |2 ranks - 1 process| at "
          f"most {pre_share:.2g} of their bound ({pre_where}; torch's spread up to "
          f"{pre_spread[worst_pre]:.3g}, {worst_pre}); ReLU flips {len(flips)}; "
          f"1 process vs torch fp64 {sanity:.3g} ({where_sanity})")
    if loss_stoker > C * loss_torch:
        failures.append(f"step {k}: loss differs by {loss_stoker:.3g} > {C} x {loss_torch:.3g}")
    if state_stoker > C * state_torch:
        failures.append(f"step {k}: state differs by {state_stoker:.3g} ({where_stoker}) > "
                        f"{C} x {state_torch:.3g}")
    if abs(one_loss - l64) > 1e-4:
        failures.append(f"step {k}: stoker's one-process loss is off torch fp64 by "
                        f"{abs(one_loss - l64):.3g}")
    return failures, len(held), len(s64)


failures = []
with tempfile.TemporaryDirectory() as tmp:
    run = subprocess.run([mpirun, "2", driver, tmp, str(STEPS), str(PER_RANK), str(LR)],
                         capture_output=True, text=True, timeout=400)
    if run.returncode != 0:
        sys.exit(f"FAIL: the driver under mpirun exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
    print(run.stdout.strip())
    held = total = 0
    for k in range(STEPS):
        f, h, t = check_step(k, read_safetensors(os.path.join(tmp, f"step{k}.safetensors"))[1])
        failures, held, total = failures + f, held + h, total + t
    print(f"{held} of {total} (step, tensor) pairs held; the rest lay upstream of a ReLU flip")
if failures:
    sys.exit("FAIL: " + "; ".join(failures))
print("ok: 2 ranks with sync BN take every step as one process at the global batch does, "
      "within torch's own fp32 spread")
