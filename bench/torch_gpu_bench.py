#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's own ResNet training speed on the GPU, the peer of `stoker train --synthetic`.

For scripts/gpu_check.sh: several variants in one process (fp32 with TF32, AMP f16 with
GradScaler, AMP bf16; NCHW or channels_last; torch.compile where it works), each on one
fixed random batch: zero_grad, forward, loss, backward, step. No data loading: compute only.
Timing as Stoker's: `--warmup` steps left out, then `--steps` timed steps; each step's time
from CUDA events on the stream (the GPU's clock: their median is `step_ms.median`), img/s
from the synchronised wall time of the timed steps. Memory: torch's allocator peaks
(max_memory_allocated / max_memory_reserved) per variant, counted from that variant's start.
--json is rewritten (atomically) after every variant, so a later variant that runs out of
time loses nothing finished; --variant-seconds bounds each variant.
--check validates the arguments without importing torch (gpu_check.sh --dry-run's plan check);
--device cpu rehearses the same code without a GPU. Any PyTorch >= 1.13 (compile: >= 2.0).
"""
import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import time

# name -> (autocast dtype name or None, channels_last, compile). tf32 = fp32 with TF32 on.
VARIANTS = {
    "f16-nhwc": ("float16", True, False),
    "bf16-nhwc": ("bfloat16", True, False),
    "tf32-nchw": (None, False, False),
    "tf32-nhwc": (None, True, False),
    "f16-nchw": ("float16", False, False),
    "bf16-nchw": ("bfloat16", False, False),
    "bf16-nhwc-compile": ("bfloat16", True, True),
    "f16-nhwc-compile": ("float16", True, True),
}


class VariantTimeout(Exception):
    pass


def make_scaler(torch, enabled):
    """GradScaler for f16 (torch.amp's since 2.3, torch.cuda.amp's before); None otherwise."""
    if not enabled:
        return None
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def run_variant(torch, torchvision, name, a, device):
    amp_name, channels_last, compile_it = VARIANTS[name]
    amp_dtype = getattr(torch, amp_name) if amp_name else None
    cuda = device.type == "cuda"
    if compile_it and not hasattr(torch, "compile"):
        raise RuntimeError(f"torch.compile needs PyTorch >= 2.0 (this is {torch.__version__})")
    torch.manual_seed(a.seed)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = getattr(torchvision.models, a.arch)(num_classes=a.classes).to(device, memory_format=fmt)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(a.batch, 3, a.size, a.size, device=device).to(memory_format=fmt)
    y = torch.randint(0, a.classes, (a.batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = make_scaler(torch, cuda and amp_dtype == torch.float16)
    step_model = torch.compile(model) if compile_it else model

    def step():
        opt.zero_grad(set_to_none=True)
        amp = torch.autocast(device.type, dtype=amp_dtype) if amp_dtype else contextlib.nullcontext()
        with amp:
            loss = loss_fn(step_model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss.detach()

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    t0 = time.perf_counter()
    step()  # the first step: cudnn.benchmark's search, and torch.compile's compilation
    sync()
    first = time.perf_counter() - t0
    for _ in range(a.warmup - 1):
        step()
    sync()
    warm = time.perf_counter() - t0
    # Timed steps: an event before each and one after the last; wall time synchronised.
    events = [torch.cuda.Event(enable_timing=True) for _ in range(a.steps + 1)] if cuda else []
    host = []
    t0 = time.perf_counter()
    for i in range(a.steps):
        if cuda:
            events[i].record()
        h = time.perf_counter()
        loss = step()
        host.append(time.perf_counter() - h)
    if cuda:
        events[-1].record()
    sync()
    wall = time.perf_counter() - t0
    if cuda:
        per_step = [events[i].elapsed_time(events[i + 1]) for i in range(a.steps)]
    else:
        per_step = [1000 * h for h in host]  # the CPU runs each step to its end
    out = {"variant": name, "amp": amp_name or ("tf32" if cuda else "f32"), "channels_last": channels_last,
           "compile": compile_it, "batch": a.batch, "size": a.size, "warmup_steps": a.warmup,
           "first_step_s": round(first, 3), "warmup_s": round(warm, 3), "timed_steps": a.steps,
           "wall_s": round(wall, 4), "images_per_s": round(a.batch * a.steps / wall, 1),
           "step_ms": {"median": round(statistics.median(per_step), 3), "p10": round(pct(per_step, 0.1), 3),
                       "p90": round(pct(per_step, 0.9), 3), "mean": round(statistics.fmean(per_step), 3)},
           "step_clock": "cuda events" if cuda else "host",
           "host_enqueue_ms_median": round(1000 * statistics.median(host), 3), "loss": float(loss)}
    out["images_per_s_median_step"] = round(1000 * a.batch / out["step_ms"]["median"], 1)
    if cuda:
        out["peak_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        out["peak_reserved_mib"] = round(torch.cuda.max_memory_reserved() / 2**20, 1)
    return out


def write_json(path, doc):
    """Atomic: a reader (or a kill) never sees half a document."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="resnet50", help="a torchvision.models constructor")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (the first compiles)")
    ap.add_argument("--variants", default="f16-nhwc,bf16-nhwc,tf32-nchw,tf32-nhwc,f16-nchw,bf16-nchw",
                    help="comma list, run in this order, of: " + ", ".join(VARIANTS))
    ap.add_argument("--variant-seconds", type=float, default=0,
                    help="give up a variant after this long (0: no limit); it is reported as timed out")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu rehearses")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", required=True, help="{context, results}, rewritten after every variant")
    ap.add_argument("--check", action="store_true", help="validate the arguments only (no torch import)")
    a = ap.parse_args(argv)
    a.names = [v for v in a.variants.split(",") if v]
    bad = [v for v in a.names if v not in VARIANTS]
    if bad or not a.names:
        ap.error(f"--variants: unknown {', '.join(bad) or '(empty)'}; known: {', '.join(VARIANTS)}")
    for opt in ("batch", "size", "classes", "steps", "warmup"):
        if getattr(a, opt) < 1:
            ap.error(f"--{opt} must be at least 1")
    return a


def main(argv):
    a = parse(argv)
    if a.check:
        print(f"torch_gpu_bench.py: ok: {a.arch} b{a.batch} {a.size}px on {a.device}, {a.warmup} warm-up + "
              f"{a.steps} timed steps, variants {','.join(a.names)} -> {a.json}")
        return 0
    try:
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"torch_gpu_bench.py: {e} (interpreter {sys.executable}): needs torch and torchvision")
    device = torch.device(a.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_gpu_bench.py: torch sees no CUDA device")
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    context = {"tool": "bench/torch_gpu_bench.py", "torch": torch.__version__, "torchvision": torchvision.__version__,
               "cuda": torch.version.cuda, "device": a.device, "arch": a.arch, "cudnn_benchmark": True,
               "timing": f"{a.warmup} warm-up steps left out; step_ms from CUDA events over {a.steps} timed steps; "
                         "images_per_s from their synchronised wall time"}
    if device.type == "cuda":
        context["gpu"] = torch.cuda.get_device_name(0)
        context["cudnn"] = torch.backends.cudnn.version()
    results = []

    def on_alarm(signum, frame):
        raise VariantTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    for name in a.names:
        t0 = time.perf_counter()
        if a.variant_seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, a.variant_seconds)
        try:
            r = run_variant(torch, torchvision, name, a, device)
        except VariantTimeout:
            r = {"variant": name, "error": f"timeout: not done in {a.variant_seconds:g} s (--variant-seconds)"}
        except Exception as e:  # one variant failing (torch.compile, often) is reported, not fatal
            r = {"variant": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        r["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(r), flush=True)
        results.append(r)
        write_json(a.json, {"context": context, "results": results})
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0 if all("error" not in r for r in results if not VARIANTS[r["variant"]][2]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
