#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: one training step of the whole reference network (train/reference/network.h)
# against torchvision's model loaded with the same weights, in train mode: logits, loss
# (label smoothing 0.1), every parameter gradient, the updated running statistics, then the
# eval-mode logits. Error max|ours - torch| / max|torch| per tensor must stay below 1e-4
# against torch in fp64 (the exact answer), and against torch in fp32 wherever torch's fp32
# is itself within 1e-5 of its fp64. Exit 77 (skip; tests/skip_policy.py) without torch.
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    import torchvision
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle here"
    skip(f"torch/torchvision are not importable ({e}); install python3-torch and "
          "python3-torchvision and run with /usr/bin/python3")

from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

stoker, driver = sys.argv[1], sys.argv[2]
TOL = 1e-4
SMOOTHING = 0.1
torch.set_num_threads(2)
failures = []


def torch_step(arch, classes, state, images, labels, dtype):
    """What the driver computes, by torchvision in `dtype`."""
    model = getattr(torchvision.models, arch)(num_classes=classes)
    model.load_state_dict(state, strict=True)
    model = model.to(dtype)
    model.train()
    logits = model(images.to(dtype))
    loss = F.cross_entropy(logits, labels, label_smoothing=SMOOTHING)
    loss.backward()
    out = {"logits": logits.detach(), "loss": loss.detach().reshape(1)}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    for name, b in model.named_buffers():
        out[name] = b.detach().clone()
    model.eval()
    with torch.no_grad():
        out["eval_logits"] = model(images.to(dtype))
    return out


def kind(name):
    if name.startswith("grad."):
        return "gradient"
    if name.endswith(("running_mean", "running_var")):
        return "running stat"
    return {"eval_logits": "eval logits"}.get(name, name)


def check_case(tmp, arch, classes, batch, size):
    case = f"{arch} {classes} classes {batch}x3x{size}x{size}"
    init = os.path.join(tmp, f"{arch}.init.safetensors")
    subprocess.run([stoker, "checkpoint", "init", arch, init, "--classes", str(classes),
                    "--seed", "7"], check=True, capture_output=True)
    state = {k: v.clone() for k, v in read_safetensors(init)[1].items()}
    # Non-trivial batch-norm state, so gamma, beta and the running statistics all matter.
    # The last BN of each residual branch gets a small gamma, as in a trained network: with
    # gamma ~1 everywhere, ResNet-50's training-mode gradients at a small input are chaotic
    # (torch's own fp32 differs from its fp64 by ~30%) and no fp32 comparison means anything.
    last_bn = ".bn3." if arch in ("resnet50", "resnet101", "resnet152") else ".bn2."
    g = torch.Generator().manual_seed(1)
    for key, t in state.items():
        shape, prefix = t.shape, key.rsplit(".", 1)[0]
        if key.endswith(".weight") and prefix + ".running_mean" in state:  # a BN's gamma
            state[key] = (torch.rand(shape, generator=g) + 0.5) * \
                (0.2 if last_bn in key else 1.0)
        elif key.endswith(".bias"):  # BN's beta, fc's bias
            state[key] = torch.randn(shape, generator=g) * 0.1
        elif key.endswith("running_mean"):
            state[key] = torch.randn(shape, generator=g) * 0.1
        elif key.endswith("running_var"):
            state[key] = torch.rand(shape, generator=g) + 0.5
    ckpt = os.path.join(tmp, f"{arch}.safetensors")
    write_safetensors(ckpt, state)
    images = torch.randn(batch, 3, size, size, generator=g)
    labels = torch.randint(0, classes, (batch,), generator=g)
    batch_file, out_file = os.path.join(tmp, "batch"), os.path.join(tmp, "out")
    write_safetensors(batch_file, {"images": images, "labels": labels})

    start = time.monotonic()
    p = subprocess.run([driver, arch, str(classes), ckpt, batch_file, out_file, str(SMOOTHING)],
                       capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if p.returncode != 0:
        failures.append(f"{case}: driver exited {p.returncode}: {p.stderr}")
        print("FAIL:", failures[-1])
        return
    print(f"{case}: driver {elapsed:.1f} s ({p.stdout.strip()})")
    ours = read_safetensors(out_file)[1]
    refs = {"fp64": torch_step(arch, classes, state, images, labels, torch.float64),
            "fp32": torch_step(arch, classes, state, images, labels, torch.float32)}
    expected = set(refs["fp64"])
    if set(ours) != expected:
        failures.append(f"{case}: tensors missing {sorted(expected - set(ours))}, "
                        f"extra {sorted(set(ours) - expected)}")
        print("FAIL:", failures[-1])
        return
    worst = {}  # (versus, kind) -> (error, tensor)
    unreliable = []  # tensors where torch's fp32 itself is off its fp64 by more than TOL / 10
    for name, r64 in refs["fp64"].items():
        got, r32 = ours[name], refs["fp32"][name]
        if tuple(got.shape) != tuple(r64.shape):
            failures.append(f"{case} {name}: shape {tuple(got.shape)} vs {tuple(r64.shape)}")
            continue
        if r64.dtype == torch.int64:  # num_batches_tracked
            if not torch.equal(got, r64):
                failures.append(f"{case} {name}: {got.item()} vs torch {r64.item()}")
            continue
        e64, e32, torch32 = error(got, r64), error(got, r32), error(r32, r64)
        for versus, err in (("fp64", e64), ("fp32", e32 if torch32 < TOL / 10 else 0.0)):
            key = (versus, kind(name))
            if err > worst.get(key, (-1.0, ""))[0]:
                worst[key] = (err, name)
        # fp64 is the exact answer: always within TOL. Torch's fp32 only where it is itself
        # within TOL / 10 of the exact answer (training-mode BN can amplify rounding).
        if not e64 < TOL:
            failures.append(f"{case} {name} vs torch fp64: error {e64:.2e} >= {TOL}")
        if torch32 < TOL / 10:
            if not e32 < TOL:
                failures.append(f"{case} {name} vs torch fp32: error {e32:.2e} >= {TOL}")
        else:
            unreliable.append((torch32, name))
    for versus in ("fp64", "fp32"):
        print(f"  worst vs torch {versus}: " + ", ".join(
            f"{k} {e:.2e} ({n})" for (v, k), (e, n) in worst.items() if v == versus))
    if unreliable:
        e, n = max(unreliable)
        print(f"  {len(unreliable)} tensors not checked against torch fp32, which is itself off "
              f"its fp64 there (worst {e:.2e}, {n})")


def error(got, ref):
    """max|got - ref| / max|ref|, in fp64."""
    ref = ref.to(torch.float64)
    scale = ref.abs().max().item()
    return (got.to(torch.float64) - ref).abs().max().item() / (scale if scale > 0 else 1.0)

with tempfile.TemporaryDirectory() as tmp:
    check_case(tmp, "resnet18", 10, 4, 40)
    check_case(tmp, "resnet50", 10, 4, 40)  # 2 x 2 at the last stage

for f in failures:
    print("FAIL:", f)
if failures:
    print(f"{len(failures)} FAILURES")
    sys.exit(1)
print("the reference network agrees with torchvision")
