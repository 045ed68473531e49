#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's own ResNet training speed on the GPU, the peer of `stoker train --synthetic`.

For scripts/gpu_check.sh: several variants in one process (fp32 with TF32, AMP f16 with
GradScaler, AMP bf16; NCHW or channels_last; torch.compile where it works), each on one
fixed random batch: zero_grad, forward, loss, backward, step, synchronised. img/s over the
timed steps and the peak memory torch's allocator held. No data loading: compute only.
--device cpu rehearses the same code without a GPU (scripts/gpu_check.sh --dry-run).
Runs under the machine's python3 (any PyTorch >= 2.0); writes one JSON document.
"""
import argparse
import contextlib
import json
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:
    sys.exit(f"torch_gpu_bench.py: {e} (interpreter {sys.executable}): needs torch and torchvision")

# name -> (autocast dtype or None, channels_last, compile)
VARIANTS = {
    "tf32-nchw": (None, False, False),
    "tf32-nhwc": (None, True, False),
    "f16-nchw": (torch.float16, False, False),
    "f16-nhwc": (torch.float16, True, False),
    "bf16-nchw": (torch.bfloat16, False, False),
    "bf16-nhwc": (torch.bfloat16, True, False),
    "bf16-nhwc-compile": (torch.bfloat16, True, True),
}


def make_scaler(enabled):
    """GradScaler for f16 (torch.amp's since 2.3, torch.cuda.amp's before); None otherwise."""
    if not enabled:
        return None
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def run_variant(name, a, device):
    amp_dtype, channels_last, compile_it = VARIANTS[name]
    torch.manual_seed(a.seed)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = getattr(torchvision.models, a.arch)(num_classes=a.classes).to(device, memory_format=fmt)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(a.batch, 3, a.size, a.size, device=device).to(memory_format=fmt)
    y = torch.randint(0, a.classes, (a.batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()
    cuda = device.type == "cuda"
    scaler = make_scaler(cuda and amp_dtype == torch.float16)
    step_model = torch.compile(model) if compile_it else model
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

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
        return loss

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    if cuda:
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    out = {"variant": name, "amp": str(amp_dtype).replace("torch.", "") if amp_dtype else "tf32" if cuda else "f32",
           "channels_last": channels_last, "compile": compile_it, "batch": a.batch, "size": a.size,
           "steps": a.steps, "warmup_s": round(warm, 3), "images_per_s": round(a.batch * a.steps / dt, 1),
           "step_ms": round(1000 * dt / a.steps, 3), "loss": float(loss)}
    if cuda:
        out["peak_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        out["peak_reserved_mib"] = round(torch.cuda.max_memory_reserved() / 2**20, 1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="resnet50", help="a torchvision.models constructor")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (and compile)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma list of: " + ", ".join(VARIANTS))
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to rehearse")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", required=True, help="write the result here")
    a = ap.parse_args()
    names = [v for v in a.variants.split(",") if v]
    bad = [v for v in names if v not in VARIANTS]
    if bad:
        ap.error(f"--variants: unknown {', '.join(bad)}; known: {', '.join(VARIANTS)}")
    device = torch.device(a.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_gpu_bench.py: torch sees no CUDA device")
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    context = {"torch": torch.__version__, "torchvision": torchvision.__version__,
               "cuda": torch.version.cuda, "device": a.device, "arch": a.arch, "cudnn_benchmark": True}
    if device.type == "cuda":
        context["gpu"] = torch.cuda.get_device_name(0)
        context["cudnn"] = torch.backends.cudnn.version()
    results = []
    for name in names:
        try:
            r = run_variant(name, a, device)
        except Exception as e:  # one variant failing (torch.compile, often) is reported, not fatal
            r = {"variant": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        print(json.dumps(r), flush=True)
        results.append(r)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    with open(a.json, "w") as f:
        json.dump({"context": context, "results": results}, f, indent=1)
    return 0 if all("error" not in r for r in results if not r["variant"].endswith("compile")) else 1


if __name__ == "__main__":
    sys.exit(main())
