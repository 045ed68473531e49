#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Time PyTorch training steps on synthetic data, the baseline for `stoker train --synthetic`.

One fixed random batch (seeded) and random labels; torchvision's model in train mode,
SGD(lr=0.1, momentum=0.9, weight_decay=1e-4), CrossEntropyLoss. A step is zero_grad,
forward, loss, backward, step, timed with perf_counter; the first --warmup steps are not
timed. No data loading: this measures compute only, like the Stoker side.

Shebang is /usr/bin/python3 on purpose: Debian's python3-torch lives there.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:
    sys.exit(f"torch_train_bench.py: {e} (interpreter {sys.executable}); "
             "install with: scripts/deps.sh --bench, and run with /usr/bin/python3")


def allocator():
    """jemalloc when it is really mapped into this process, else glibc. The mapping is
    checked, not only LD_PRELOAD: ld.so ignores a preload it cannot find (with a warning)
    and the run would silently be glibc's."""
    try:
        with open("/proc/self/maps") as f:
            return "jemalloc" if "jemalloc" in f.read() else "glibc"
    except OSError:
        return "jemalloc" if "jemalloc" in os.environ.get("LD_PRELOAD", "") else "glibc"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="resnet50", help="a torchvision.models constructor")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224, help="input height = width")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=8, help="all steps, warm-up included")
    ap.add_argument("--warmup", type=int, default=2, help="first steps left out of the timing")
    ap.add_argument("--channels-last", action="store_true", help="NHWC model and input")
    ap.add_argument("--autocast", choices=["bf16"],
                    help="forward and loss under torch.autocast('cpu', bfloat16): PyTorch's "
                         "mixed precision, against `stoker train --precision bf16`")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the result here")
    a = ap.parse_args()

    for name in ("batch", "size", "classes", "threads", "steps"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if not 0 <= a.warmup < a.steps:
        ap.error(f"--warmup must be in [0, --steps); got {a.warmup} with --steps {a.steps}")
    ctor = getattr(torchvision.models, a.arch, None)
    if not callable(ctor) or a.arch.startswith("_") or a.arch[0].isupper():
        ap.error(f"--arch {a.arch}: not a torchvision.models constructor (e.g. resnet18, resnet50)")

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = ctor(num_classes=a.classes).train()
    x = torch.randn(a.batch, 3, a.size, a.size)
    y = torch.randint(0, a.classes, (a.batch,))
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    # The optimizer is built after the .to(): it must hold the tensors that are trained.
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()

    fmt = "channels_last" if a.channels_last else "contiguous"
    alloc = allocator()
    precision = "bf16 autocast" if a.autocast else "f32"
    tag = f"pytorch {a.arch} b{a.batch} {a.size}px T={a.threads} {fmt} {alloc} {precision}"
    step_s, losses = [], []
    for i in range(a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if a.autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        losses.append(loss.item())
        if i >= a.warmup:
            step_s.append(dt)
        print(f"{tag}: step {i + 1}/{a.steps} {dt:.3f} s {a.batch / dt:.2f} img/s "
              f"loss {losses[-1]:.4f}{' (warm-up)' if i < a.warmup else ''}",
              file=sys.stderr, flush=True)

    ips = a.batch * len(step_s) / sum(step_s)
    res = {
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "arch": a.arch,
        "batch": a.batch,
        "size": a.size,
        "classes": a.classes,
        "threads": a.threads,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "channels_last": a.channels_last,
        "precision": "bf16" if a.autocast else "f32",
        "autocast": bool(a.autocast),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"),
        "aten_cpu_capability": os.environ.get("ATEN_CPU_CAPABILITY"),
        "allocator": alloc,
        "malloc_conf": os.environ.get("MALLOC_CONF"),
        "mkldnn": torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled,
        "steps": a.steps,
        "warmup": a.warmup,
        "step_s": step_s,
        "step_ms": {"median": statistics.median(step_s) * 1e3},
        "images_per_s": ips,
        "loss": losses,
    }
    finite = all(math.isfinite(v) for v in losses)
    print(f"{tag}: {ips:.2f} img/s over {len(step_s)} steps (median step "
          f"{res['step_ms']['median']:.0f} ms), loss {losses[0]:.4f} -> {losses[-1]:.4f}"
          f"{'' if finite else ' NOT FINITE'}, torch {torch.__version__}", file=sys.stderr)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
