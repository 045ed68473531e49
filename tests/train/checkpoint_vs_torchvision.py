#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test, both ways: `stoker checkpoint init resnet18` loads (optim.* keys dropped) with
# strict=True into torchvision's resnet18(num_classes=10), with torch's dtypes and init
# statistics; torchvision's state_dict written here passes `stoker checkpoint info --check` with
# the same keys, shapes and sums, and tampered copies fail naming the file and the key. The
# format is read and written by safetensors_io.py (Debian has no python safetensors). Exit 77
# (skip) when torch or torchvision cannot be imported.
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import torch
    import torchvision
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle here"
    skip(f"torch/torchvision are not importable ({e}); install python3-torch and "
          "python3-torchvision and run with /usr/bin/python3")

from safetensors_io import NAMES, read_safetensors, write_safetensors  # noqa: E402

stoker = sys.argv[1]
torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
failures = []
MOMENTUM = "optim.momentum."


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([stoker, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def stoker_to_torch(tmp):
    path = os.path.join(tmp, "stoker.safetensors")
    rc, _, err = run("checkpoint", "init", "resnet18", path, "--classes", "10", "--seed", "1",
                     "--momentum")
    if rc != 0:
        check(False, f"checkpoint init exited {rc}: {err}")
        return
    header, tensors, metadata = read_safetensors(path)
    model = torchvision.models.resnet18(num_classes=10)
    expected = model.state_dict()
    params = dict(model.named_parameters())
    order = [k for k in header if not k.startswith("optim.")]
    check(order == list(expected), "model keys in state_dict order, before the optim.* keys")
    check(list(header)[len(order):] == [MOMENTUM + k for k in params],
          "one optim.momentum.<key> per trainable parameter, in parameters() order")
    for key, p in params.items():
        m = tensors.get(MOMENTUM + key)
        check(m is not None and m.shape == p.shape and m.dtype == torch.float32
              and not m.any(), f"{MOMENTUM}{key}: zero F32 of shape {tuple(p.shape)}")
    check(metadata.get("format") == "stoker-checkpoint/1", f"format metadata: {metadata}")
    check((metadata.get("epoch"), metadata.get("step"), metadata.get("sampler_position"),
           metadata.get("seed")) == ("0", "0", "0", "1"), f"run state metadata: {metadata}")
    config = json.loads(metadata.get("config", "null"))
    check(isinstance(config, dict) and config.get("arch") == "resnet18"
          and config.get("classes") == 10, f"config metadata: {config}")

    sd = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    # load_state_dict would convert dtypes silently: compare them first.
    for key, ref in expected.items():
        got = sd.get(key)
        check(got is not None and got.dtype == ref.dtype and got.shape == ref.shape,
              f"{key}: {ref.dtype} {tuple(ref.shape)} expected, got "
              f"{None if got is None else (got.dtype, tuple(got.shape))}")
    try:
        model.load_state_dict(sd, strict=True)
    except Exception as e:  # noqa: BLE001 - report, then carry on with the other checks
        check(False, f"load_state_dict(strict=True): {e}")
        return
    loaded = model.state_dict()
    check(all(torch.equal(loaded[k], sd[k]) for k in sd), "values survive load_state_dict")

    w = sd["conv1.weight"]
    std = math.sqrt(2 / (64 * 7 * 7))
    check(abs(w.std().item() / std - 1) < 0.05 and abs(w.mean().item()) < 0.05 * std,
          f"conv1.weight: Kaiming normal std {std:.5f}, got {w.std().item():.5f}")
    bound = 1 / math.sqrt(512)
    fc = sd["fc.weight"]
    check(fc.abs().max().item() < bound and abs(fc.std().item() / (bound / math.sqrt(3)) - 1) < 0.05,
          f"fc.weight: uniform in +-{bound:.5f}")
    check(sd["fc.bias"].abs().max().item() < bound, "fc.bias within the bound")
    check(torch.equal(sd["layer3.1.bn2.weight"], torch.ones(256)), "BN weight ones")
    check(torch.equal(sd["layer3.1.bn2.bias"], torch.zeros(256)), "BN bias zeros")
    check(torch.equal(sd["layer3.1.bn2.running_var"], torch.ones(256)), "running_var ones")
    check(sd["bn1.num_batches_tracked"].dtype == torch.int64
          and sd["bn1.num_batches_tracked"].item() == 0, "num_batches_tracked I64 0")
    model.eval()
    with torch.no_grad():
        out = model(torch.randn(2, 3, 64, 64))
    check(out.shape == (2, 10) and torch.isfinite(out).all().item(), "the loaded model runs")


def torch_to_stoker(tmp):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    with torch.no_grad():  # non-trivial buffers, so the sums below compare real values
        for i, (name, b) in enumerate(model.named_buffers()):
            if name.endswith("running_mean"):
                b.normal_()
            elif name.endswith("running_var"):
                b.uniform_(0.5, 2)
            else:
                b.fill_(i)
    sd = model.state_dict()
    # The reference writer's order (widest dtype first, then by name), not state_dict's.
    ordered = sorted(sd.items(), key=lambda kv: (-kv[1].element_size(), kv[0]))
    path = os.path.join(tmp, "torch.safetensors")
    write_safetensors(path, ordered, {"source": "torchvision " + torchvision.__version__})

    rc, out, err = run("checkpoint", "info", path, "--check", "resnet18", "--classes", "10",
                       "--sums")
    check(rc == 0, f"info --check on torchvision's state_dict exited {rc}: {err}")
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    check([r[0] for r in rows] == [k for k, _ in ordered], "info lists the tensors in file order")
    check(f"# source = torchvision {torchvision.__version__}" in out, "info shows the metadata")
    for row in rows:
        if len(row) != 4 or row[0] not in sd:
            check(False, f"info line {row}")
            continue
        name, dtype, dims, total = row
        t = sd[name]
        check(dtype == NAMES[t.dtype], f"{name}: dtype {dtype}, torch has {t.dtype}")
        check(dims == "[" + ",".join(str(d) for d in t.shape) + "]", f"{name}: shape {dims} vs {tuple(t.shape)}")
        ref = t.double().sum().item()
        check(math.isclose(float(total), ref, rel_tol=1e-9, abs_tol=1e-9),
              f"{name}: sum {total}, torch {ref}")

    def expect_failure(what, items, needle, raw=None):
        bad = os.path.join(tmp, "bad.safetensors")
        if raw is None:
            write_safetensors(bad, items)
        else:
            with open(bad, "wb") as f:
                f.write(raw)
        rc, _, err = run("checkpoint", "info", bad, "--check", "resnet18", "--classes", "10")
        check(rc == 1 and bad in err and needle in err,
              f"{what}: expected exit 1 naming {bad} and '{needle}', got {rc}: {err.strip()}")

    items = list(sd.items())
    expect_failure("missing key",
                   [kv for kv in items if kv[0] != "layer2.0.downsample.1.running_var"],
                   "missing 'layer2.0.downsample.1.running_var' (F32 [128])")
    expect_failure("extra key", items + [("fc2.weight", torch.zeros(3, 512))],
                   "extra 'fc2.weight' (F32 [3, 512])")
    eleven = torchvision.models.resnet18(num_classes=11).state_dict()
    expect_failure("mis-shaped fc", [(k, eleven[k] if k.startswith("fc.") else v)
                                     for k, v in items],
                   "'fc.weight' is F32 [11, 512]; expected F32 [10, 512]")
    expect_failure("num_batches_tracked as float",
                   [(k, v.float() if k.endswith("num_batches_tracked") else v) for k, v in items],
                   "'bn1.num_batches_tracked' is F32 []; expected I64 []")
    with open(path, "rb") as f:
        good = f.read()
    expect_failure("truncated file", None, "(truncated file?)", good[:-4])
    expect_failure("corrupt header", None, "not valid JSON", good[:8] + b"x" + good[9:])
    # --check takes the class count from the file's fc (not an assumed 1000).
    rc, _, err = run("checkpoint", "info", path, "--check", "resnet18")
    check(rc == 0, f"--check resnet18 on a 10-class file: {rc}: {err.strip()}")
    rc, _, _ = run("checkpoint", "info")
    check(rc == 2, f"info without a file is a usage error (2), got {rc}")


with tempfile.TemporaryDirectory() as tmp:
    stoker_to_torch(tmp)
    torch_to_stoker(tmp)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("OK: stoker checkpoints load strictly into torchvision's resnet18, and torchvision's "
      "state_dict passes stoker checkpoint info --check")
