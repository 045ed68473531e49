#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: Stoker's SGD against torch.optim.SGD (momentum, Nesterov, weight decay with and
# without the BN/bias exemption) over several steps with a changing lr, and Stoker's
# learning-rate schedule against torch's LinearLR + MultiStepLR / CosineAnnealingLR; and
# Stoker's LARS against a LARS written here from the paper (You et al. 2017, arXiv:1708.03888)
# in float64: trust = eta ||w|| / (||g|| + wd ||w||) on tensors of 2 or more dimensions,
# applied to g + wd w before torch-style momentum.
# Exit 77 (skip; tests/skip_policy.py) without torch.
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import torch
except Exception as e:  # noqa: BLE001 - no oracle here
    skip(f"torch is not importable ({e}); install python3-torch")

driver = sys.argv[1]
torch.manual_seed(0)
worst = 0.0


def check_sgd(nesterov, decay_bn, steps=7):
    global worst
    shapes = [(8, 3, 3, 3), (8,), (8,), (10, 8), (10,)]
    params = [torch.randn(s) for s in shapes]
    grads = [[torch.randn(s) for s in shapes] for _ in range(steps)]
    lrs = [0.1 * (0.8 ** i) for i in range(steps)]
    wd = 1e-2
    decay = [p for p in params if p.dim() > 1 or decay_bn]
    no_decay = [p for p in params if not (p.dim() > 1 or decay_bn)]
    tparams = [p.clone().requires_grad_(True) for p in params]
    groups = [{"params": [tp for tp, p in zip(tparams, params) if any(p is q for q in decay)],
               "weight_decay": wd}]
    if no_decay:
        groups.append({"params": [tp for tp, p in zip(tparams, params)
                                  if any(p is q for q in no_decay)], "weight_decay": 0.0})
    opt = torch.optim.SGD(groups, lr=lrs[0], momentum=0.9, nesterov=nesterov)
    for s in range(steps):
        for g in opt.param_groups:
            g["lr"] = lrs[s]
        for tp, g in zip(tparams, grads[s]):
            tp.grad = g.clone()
        opt.step()
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "in"), os.path.join(d, "out")
        with open(inp, "wb") as f:
            f.write(struct.pack("<iiiffi", steps, int(nesterov), int(decay_bn), 0.9, wd, len(params)))
            for p in params:
                f.write(struct.pack("<ii", p.numel(), int(p.dim() == 1)))
                f.write(p.numpy().astype("<f4").tobytes())
            for s in range(steps):
                f.write(struct.pack("<f", lrs[s]))
                for g in grads[s]:
                    f.write(g.numpy().astype("<f4").tobytes())
        subprocess.run([driver, "sgd", inp, out], check=True)
        data = open(out, "rb").read()
    # Every parameter's value and momentum, nothing missing and nothing extra.
    expected = 8 * sum(tp.numel() for tp in tparams)
    if len(data) != expected:
        sys.exit(f"FAIL: the driver wrote {len(data)} bytes of SGD state, expected {expected}")
    off = 0
    for tp in tparams:
        n = tp.numel()
        value = torch.frombuffer(bytearray(data[off:off + 4 * n]), dtype=torch.float32)
        mom = torch.frombuffer(bytearray(data[off + 4 * n:off + 8 * n]), dtype=torch.float32)
        off += 8 * n
        ref_v = tp.detach().flatten()
        ref_m = opt.state[tp]["momentum_buffer"].flatten()
        for got, ref, what in ((value, ref_v, "weights"), (mom, ref_m, "momentum")):
            err = ((got - ref).abs().max() / ref.abs().max()).item()
            worst = max(worst, err)
            if err > 1e-6:
                sys.exit(f"FAIL: SGD {what} differ from torch (nesterov={nesterov}, "
                         f"decay_bn={decay_bn}): max relative error {err:.3g}")


def write_input(path, steps, nesterov, decay_bn, momentum, wd, params, grads, lrs):
    with open(path, "wb") as f:
        f.write(struct.pack("<iiiffi", steps, int(nesterov), int(decay_bn), momentum, wd, len(params)))
        for p in params:
            f.write(struct.pack("<ii", p.numel(), int(p.dim() == 1)))
            f.write(p.numpy().astype("<f4").tobytes())
        for s in range(steps):
            f.write(struct.pack("<f", lrs[s]))
            for g in grads[s]:
                f.write(g.numpy().astype("<f4").tobytes())


def check_lars(decay_bn, steps=6, eta=0.02):
    global worst
    shapes = [(8, 3, 3, 3), (8,), (8,), (10, 8), (10,)]
    params = [torch.randn(s) for s in shapes]
    # Gradients of very different sizes per tensor: the trust ratio has work to do.
    grads = [[torch.randn(s) * (10.0 ** (i % 3 - 1)) for i, s in enumerate(shapes)]
             for _ in range(steps)]
    lrs = [0.5 * (0.9 ** i) for i in range(steps)]
    wd, momentum = 5e-3, 0.9
    w = [p.double().clone() for p in params]
    buf = [None] * len(w)
    for s in range(steps):
        for i, (p, g32) in enumerate(zip(w, grads[s])):
            g = g32.double()
            one_d = p.dim() == 1
            decay = wd if (not one_d or decay_bn) else 0.0
            d = g + decay * p
            if not one_d:
                wn, gn = p.norm().item(), g.norm().item()
                if wn > 0 and gn > 0:
                    d = d * (eta * wn / (gn + decay * wn))
            buf[i] = d.clone() if buf[i] is None else buf[i] * momentum + d
            p -= lrs[s] * buf[i]
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "in"), os.path.join(d, "out")
        write_input(inp, steps, False, decay_bn, momentum, wd, params, grads, lrs)
        subprocess.run([driver, "lars", str(eta), inp, out], check=True)
        data = open(out, "rb").read()
    expected = 8 * sum(p.numel() for p in params)
    if len(data) != expected:
        sys.exit(f"FAIL: the LARS driver wrote {len(data)} bytes, expected {expected}")
    off = 0
    for i, p in enumerate(w):
        n = p.numel()
        value = torch.frombuffer(bytearray(data[off:off + 4 * n]), dtype=torch.float32).double()
        mom = torch.frombuffer(bytearray(data[off + 4 * n:off + 8 * n]), dtype=torch.float32).double()
        off += 8 * n
        for got, ref, what in ((value, p.flatten(), "weights"), (mom, buf[i].flatten(), "momentum")):
            err = ((got - ref).abs().max() / ref.abs().max()).item()
            worst = max(worst, err)
            if err > 1e-5:
                sys.exit(f"FAIL: LARS {what} of tensor {i} {tuple(p.shape)} differ from the "
                         f"reference (decay_bn={decay_bn}): max relative error {err:.3g}")
    # The trust ratio did change the step: plain SGD lands elsewhere.
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "in"), os.path.join(d, "out")
        write_input(inp, steps, False, decay_bn, momentum, wd, params, grads, lrs)
        subprocess.run([driver, "sgd", inp, out], check=True)
        sgd = torch.frombuffer(bytearray(open(out, "rb").read()[:4 * params[0].numel()]),
                               dtype=torch.float32).double()
    if ((sgd - w[0].flatten()).abs().max() / w[0].abs().max()).item() < 1e-2:
        sys.exit("FAIL: LARS and SGD give the same conv weights: the trust ratio is not applied")


def check_lr(kind, steps=60):
    global worst
    base, warm, start, gamma, total, eta_min, milestones = 0.4, 5, 0.1, 0.5, steps, 0.01, [10, 30]
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base)
    first = torch.optim.lr_scheduler.LinearLR(opt, start_factor=start, end_factor=1.0, total_iters=warm)
    if kind == "step":
        second = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=gamma)
    else:
        second = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warm, eta_min=eta_min)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [first, second], milestones=[warm])
    ref = []
    for _ in range(steps):
        ref.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    args = [driver, "lr", kind, str(base), str(warm), str(start), str(gamma), str(total),
            str(eta_min), str(steps)] + ([str(m) for m in milestones] if kind == "step" else [])
    got = [float(x) for x in subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()]
    if len(got) != len(ref):
        sys.exit(f"FAIL: lr schedule {kind}: the driver printed {len(got)} rates for {steps} steps")
    for i, (g, r) in enumerate(zip(got, ref)):
        err = abs(g - r) / abs(r)
        worst = max(worst, err)
        if err > 1e-6:
            sys.exit(f"FAIL: lr schedule {kind} step {i}: stoker {g} torch {r}")


for nesterov in (False, True):
    for decay_bn in (False, True):
        check_sgd(nesterov, decay_bn)
check_lars(False)
check_lars(True)
check_lr("step")
check_lr("cosine")
print(f"ok: SGD (4 configurations, 7 steps) and lr schedules (step, cosine) match torch, LARS "
      f"(2 configurations, 6 steps) matches its float64 reference; worst relative error {worst:.3g}")
