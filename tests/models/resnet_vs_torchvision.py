#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: `stoker model` against torchvision's own ResNets. For every depth and two class
# counts, --params lists exactly resnetX(num_classes=K).state_dict()'s keys, in order, with
# its shapes; the --json description has torchvision's parameters/buffers split, module
# execution order (forward hooks), output shapes at several input sizes, conv/fc MACs, and
# initial values drawn from the same distributions (zero_init_residual included). Exit 77
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

stoker = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def stoker_out(*args):
    return subprocess.run([stoker, "model", *args], check=True, capture_output=True,
                          text=True).stdout


def stoker_params(arch, classes):
    rows = []
    for line in stoker_out(arch, "--classes", str(classes), "--params").splitlines():
        parts = line.split()  # "name d0,d1,..." or "name" for a scalar
        rows.append((parts[0], tuple(int(d) for d in parts[1].split(",")) if len(parts) > 1 else ()))
    return rows


def stoker_json(arch, classes, size, zero_init=False):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.json")
        extra = ["--zero-init-residual"] if zero_init else []
        stoker_out(arch, "--classes", str(classes), "--input", size, "--json", path, *extra)
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        # {context: what was described, results: [the description]}
        return {**doc["context"], **doc["results"][0]}


def torch_trace(model, h, w):
    """Leaf modules in call order (a block's shared ReLU once per call), their output shapes
    per image (padded to C x H x W) and conv/fc multiply-adds from the real tensors."""
    calls = []

    def hook(name):
        def fn(m, inputs, out):
            shape = tuple(out.shape[1:]) + (1,) * (4 - out.dim())
            macs = 0
            if isinstance(m, torch.nn.Conv2d):
                kh, kw = m.kernel_size
                macs = out[0].numel() * (m.in_channels // m.groups) * kh * kw
            elif isinstance(m, torch.nn.Linear):
                macs = m.in_features * m.out_features
            calls.append((name, shape, macs))
        return fn

    hooks = [m.register_forward_hook(hook(n)) for n, m in model.named_modules()
             if n and not list(m.children())]
    with torch.no_grad():
        model(torch.zeros(1, 3, h, w))
    for handle in hooks:
        handle.remove()
    return calls


def ours_trace(doc):
    calls = []
    for layer in doc["layers"]:
        if layer["kind"] == "add":  # `out += identity` is no module: nothing to hook
            continue
        name = layer["name"]
        if layer["kind"] == "relu" and name != "relu":
            name = name.rstrip("0123456789")  # our relu1/2/3 are calls of the block's relu
        calls.append((name, tuple(layer["shape"]), layer["macs"]))
    return calls


def check_init(arch, doc, model):
    state = model.state_dict()
    zeros = 0
    for p in doc["params"]:
        t = state[p["name"]].double()
        kind, scale, n = p["init"]["kind"], p["init"]["scale"], t.numel()
        what = f"{arch} init {p['name']} ({kind} {scale:.4g}, {n} values)"
        if kind in ("zeros", "ones"):
            check(bool((t == (0 if kind == "zeros" else 1)).all()), what + ": torch differs")
            zeros += kind == "zeros" and p["name"].endswith("weight")
        elif kind == "normal":
            rel = abs(t.std().item() - scale) / scale
            check(rel < 6 / math.sqrt(2 * n) + 0.002, f"{what}: torch std {t.std().item():.4g}")
        elif kind == "uniform":
            top = t.abs().max().item()
            check(top <= scale * (1 + 1e-6), f"{what}: torch max |x| {top:.4g}")
            if n >= 1000:
                check(top > 0.99 * scale, f"{what}: torch max |x| {top:.4g}, range unused")
                std = t.std().item() * math.sqrt(3)
                check(abs(std - scale) / scale < 6 / math.sqrt(n), f"{what}: torch std {std:.4g}")
        else:
            check(False, f"{what}: unknown init kind")
    return zeros


for depth in (18, 34, 50, 101, 152):
    arch = f"resnet{depth}"
    for classes in (1000, 7):
        model = getattr(torchvision.models, arch)(num_classes=classes,
                                                  zero_init_residual=classes == 1000)
        theirs = [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
        ours = stoker_params(arch, classes)
        if ours != theirs:
            diff = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                        min(len(ours), len(theirs)))
            check(False, f"{arch} K={classes}: state_dict differs at entry {diff}: stoker "
                  f"{ours[diff:diff + 2]}, torchvision {theirs[diff:diff + 2]} "
                  f"({len(ours)} vs {len(theirs)} entries)")
        if classes != 1000:
            continue
        model.eval()
        doc = stoker_json(arch, classes, "61x97", zero_init=True)
        trainable = [p["name"] for p in doc["params"] if p["trainable"]]
        buffers = [p["name"] for p in doc["params"] if not p["trainable"]]
        check(trainable == [n for n, _ in model.named_parameters()], f"{arch}: parameters")
        check(buffers == [n for n, _ in model.named_buffers()], f"{arch}: buffers")
        check(doc["totals"]["parameters"] == sum(p.numel() for p in model.parameters()),
              f"{arch}: parameter count")
        zeroed = check_init(arch, doc, model)
        blocks = sum(len(getattr(model, f"layer{i}")) for i in range(1, 5))
        check(zeroed == blocks, f"{arch}: {zeroed} zero-initialised BN weights, {blocks} blocks")
        sizes = ["1x1", "61x97"] + (["224x224"] if depth == 50 else [])
        for size in sizes:
            h, w = map(int, size.split("x"))
            doc = stoker_json(arch, classes, size)
            a, b = ours_trace(doc), torch_trace(model, h, w)
            if a != b:
                diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                check(False, f"{arch} at {size}: call {diff}: stoker {a[diff:diff + 1]}, "
                      f"torchvision {b[diff:diff + 1]} ({len(a)} vs {len(b)} calls)")
            check(doc["totals"]["forward_macs"] == sum(m for _, _, m in b), f"{arch} {size}: MACs")
            if size == "224x224":
                print(f"{arch} at 224: {doc['totals']['forward_macs']:,} MACs per image")
        print(f"ok so far: {arch}")



def ks_p(a, b, most=20000):
    """Two-sample Kolmogorov-Smirnov statistic and p-value (asymptotic) on at most `most`
    values of each, drawn without replacement with a fixed generator: enough to see a std
    off by ~5%, and seconds rather than minutes for ResNet-50's millions of weights."""
    g = torch.Generator().manual_seed(0)
    a, b = a.flatten(), b.flatten()
    a = a[torch.randperm(a.numel(), generator=g)[:most]]
    b = b[torch.randperm(b.numel(), generator=g)[:most]]
    a, b = torch.sort(a.double())[0], torch.sort(b.double())[0]
    v = torch.cat([a, b]).unique()
    d = (torch.searchsorted(a, v, right=True) / len(a) -
         torch.searchsorted(b, v, right=True) / len(b)).abs().max().item()
    ne = len(a) * len(b) / (len(a) + len(b))
    lam = (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * d
    return d, min(1.0, max(0.0, 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam)
                                        for k in range(1, 101))))


def check_checkpoint_init(arch, classes):
    """The weights `stoker checkpoint init --zero-init-residual` really writes, tensor by
    tensor, against a torchvision model built with zero_init_residual=True: constants (BN
    gamma 1 and beta 0, the zeroed last BN gamma of each residual branch, running statistics)
    equal, and every random tensor (Kaiming normal fan_out convs, nn.Linear's uniform
    +-1/sqrt(fan_in) fc weight and bias) drawn from the same distribution: a two-sample KS
    test per tensor at a family-wise false-alarm rate of 1e-3 (Bonferroni), plus the uniform's
    hard bound. A wrong fan (fan_in for fan_out), a uniform for a normal or a missed zero-init
    fails; the values themselves differ (other generators) and are not compared."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
    from safetensors_io import read_safetensors
    model = getattr(torchvision.models, arch)(num_classes=classes, zero_init_residual=True)
    theirs = model.state_dict()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "init.safetensors")
        subprocess.run([stoker, "checkpoint", "init", arch, path, "--classes", str(classes),
                        "--seed", "5", "--zero-init-residual"], check=True, capture_output=True)
        ours = read_safetensors(path)[1]
    check(sorted(ours) == sorted(theirs), f"{arch} checkpoint init: tensors differ from "
          f"torchvision's: {sorted(set(ours) ^ set(theirs))[:6]}")
    random = [k for k, t in theirs.items() if t.numel() > 1 and not (t == t.flatten()[0]).all()]
    alpha = 1e-3 / max(1, len(random))
    worst = (1.0, "")
    for name, t in theirs.items():
        o = ours.get(name)
        if o is None or tuple(o.shape) != tuple(t.shape):
            check(False, f"{arch} checkpoint init {name}: shape {None if o is None else tuple(o.shape)}, "
                  f"torchvision {tuple(t.shape)}")
            continue
        if name not in random:
            check(bool((o.double() == t.double()).all()),
                  f"{arch} checkpoint init {name}: not torchvision's constant {t.flatten()[0].item()}")
            continue
        d, p = ks_p(o, t)
        worst = min(worst, (p, name))
        check(p >= alpha, f"{arch} checkpoint init {name}: values not distributed as "
              f"torchvision's (KS D={d:.4f}, p={p:.2e} < {alpha:.1e}; std {o.double().std():.4g} "
              f"vs {t.double().std():.4g})")
        if name.startswith("fc."):
            bound = 1 / math.sqrt(theirs["fc.weight"].shape[1])
            check(o.abs().max().item() <= bound * (1 + 1e-6),
                  f"{arch} checkpoint init {name}: |x| up to {o.abs().max().item():.4g} > {bound:.4g}")
    print(f"{arch} checkpoint init: {len(theirs)} tensors, {len(random)} random ones, lowest KS "
          f"p {worst[0]:.3f} ({worst[1]}), threshold {alpha:.1e}")


check_checkpoint_init("resnet18", 100)

# The smallest input torch rejects is the one Stoker rejects.
try:
    torchvision.models.resnet18().eval()(torch.zeros(1, 3, 0, 0))
    check(False, "torch accepted a 0x0 input")
except RuntimeError:
    pass
rc = subprocess.run([stoker, "model", "resnet18", "--input", "0"], capture_output=True).returncode
check(rc == 2, f"stoker model --input 0: exit {rc}, expected 2 (a usage error)")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok: state_dict keys/shapes, parameters/buffers, execution order, shapes, MACs and init "
      "distributions equal torchvision's for resnet18/34/50/101/152")
