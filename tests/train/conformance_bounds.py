#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The oracle of the conformance suite's cuda tolerances (backend_conformance_test.cc). For each
# cuda row, torch runs the row's training step (same model, initial state, images and labels,
# written by conformance_case_driver) in fp64 and in the row's number format, and measures its
# own error against fp64 with the suite's two measures per tensor: max|diff| / max|fp64| and
# ||diff||_2 / ||fp64||_2 (the loss: |diff| / max(1, |loss|)), with each of its two convolution
# implementations (oneDNN's and its own), keeping the worse. A row's bound for a kind of tensor
# (activations, their gradients, parameter gradients, running statistics, logits, eval logits,
# loss) is C times torch's worst error over that kind, and at least C units of the rounding of
# what the kind is stored in. Per kind, since two valid implementations of the same format
# differ per tensor by up to 5x in the max measure (torch's own two, f16 gradients), their worst
# per kind by under 1.7x; for tf32/f16/bf16 gradients the normalised measure is bound per tensor
# as well (PER_TENSOR says why). C = 4 = 2 x 2: the suite compares two inexact sides (the
# backend at its format against the reference network, whose fp32 storage errs about as much
# as torch's fp32), and cuDNN's algorithms (Winograd, FFT, split-K, its own batch norm) round in
# other places than either of torch's CPU implementations, which already differ by up to 1.7x.
# The formats, as the GPU backend computes (train/README.md, "The GPU backend"):
#   f32   torch's fp32 as it is;
#   tf32  every conv and matmul operand (input, weight; in backward the incoming gradient too)
#         rounded to 10 mantissa bits (round to nearest even on the fp32 bits), fp32 accumulate;
#   f16, bf16  activations and their gradients stored in the format, conv/matmul in the format
#         with fp32 accumulate, conv weight gradients written in the format (cuDNN's), batch
#         norm computed in fp32 on stored values (statistics, gamma/beta gradients fp32), the FC
#         writes fp32 logits and an fp32 weight gradient, loss in fp32; f16 under a dynamic
#         loss scale as torch's GradScaler (2^16, halved while a gradient is not finite).
#
#   conformance_bounds.py DRIVER --write FILE     compute and write the C++ table
#   conformance_bounds.py DRIVER --write-max FILE as --write, each value the larger of FILE's
#                                                 and this machine's: run once per oneDNN ISA
#                                                 cap (ONEDNN_MAX_CPU_ISA=AVX2, ...), since
#                                                 torch's CPU kernels round by the ISA
#   conformance_bounds.py DRIVER --check FILE     recompute; FILE must agree (ctest)
#   conformance_bounds.py DRIVER --judge LOG      set a gtest log of the suite beside the bounds
#   conformance_bounds.py DRIVER --plant          planted bugs are caught, or not, as PLANTS says
#                                                 (ctest)
# Exit 77 (tests/skip_policy.py) without torch; 1 on a failure.
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.grad import conv2d_input, conv2d_weight
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle here"
    skip(f"torch is not importable ({e}); install python3-torch and run with /usr/bin/python3")

from safetensors_io import read_safetensors  # noqa: E402

C = 4.0
# The unit roundoff of what a kind of tensor is stored in: one rounding of a result is the least
# error any backend may make, so no bound is below C of it. f16/bf16 store activations, their
# gradients and the conv weight gradients in the format; everything else (and tf32's) is fp32.
UNIT = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}
STORED_IN_FORMAT = ("activation", "activation gradient", "parameter gradient")


def unit(fmt, kind):
    return UNIT.get(fmt, 2.0 ** -24) if kind in STORED_IN_FORMAT else 2.0 ** -24


SMOOTHING = 0.1
KINDS = ("activation", "activation gradient", "parameter gradient", "running statistic",
         "logits", "eval logits", "loss")
# The cuda rows of step_cases() in backend_conformance_test.cc, by the suite's case_name():
# (name, depth, batch, size, input type, format). A compute layout or the input's layout does
# not change the arithmetic torch models, only which algorithms cuDNN takes (covered by C).
ROWS = (
    ("r18_n4_40px_f32_nchw", 18, 4, 40, "f32", "f32"),
    ("r18_n2_40px_f32_nhwc", 18, 2, 40, "f32", "f32"),
    ("r18_n4_40px_u8_nchw", 18, 4, 40, "u8", "f32"),
    ("r18_n2_40px_u8_nhwc", 18, 2, 40, "u8", "f32"),
    ("r50_n2_40px_f32_nchw", 50, 2, 40, "f32", "f32"),
    ("r18_n4_40px_f32_nchw_compute_nchw", 18, 4, 40, "f32", "f32"),
    ("r18_n4_40px_f32_nchw_compute_nhwc", 18, 4, 40, "f32", "f32"),
    ("r18_n4_40px_f32_nchw_tf32_compute_nchw", 18, 4, 40, "f32", "tf32"),
    ("r18_n4_40px_f32_nchw_tf32_compute_nhwc", 18, 4, 40, "f32", "tf32"),
    ("r18_n4_64px_f32_nchw_f16", 18, 4, 64, "f32", "f16"),
    ("r18_n4_64px_f32_nchw_bf16", 18, 4, 64, "f32", "bf16"),
)
torch.set_num_threads(2)


def tf32(x):
    """fp32 -> TF32 (10 mantissa bits), round to nearest even, kept in fp32."""
    b = x.contiguous().view(torch.int32)
    b = (b + 0xFFF + ((b >> 13) & 1)) & ~0x1FFF
    return b.view(torch.float32)


class Fmt:
    """Where a format rounds: `store` a tensor kept in memory, `operand` a conv/matmul input."""

    def __init__(self, name, plant=None):
        self.name, self.plant = name, plant or set()
        self.dtype = torch.float64 if name == "f64" else torch.float32
        self.low = {"f16": torch.float16, "bf16": torch.bfloat16}.get(name)
        if "bf16-storage" in self.plant:
            self.low = torch.bfloat16

    def store(self, x):
        return x.to(self.low).to(self.dtype) if self.low else x

    def store_grad(self, g):
        return g.to(self.low).to(self.dtype) if self.low else g

    def operand(self, x):
        return tf32(x) if self.name == "tf32" else x  # low formats: stored values already


class Store(torch.autograd.Function):
    """A tensor in memory: its value and the gradient that reaches it, in the format."""

    @staticmethod
    def forward(ctx, x, fmt):
        ctx.fmt = fmt
        return fmt.store(x)

    @staticmethod
    def backward(ctx, g):
        return ctx.fmt.store_grad(g), None


class Conv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, stride, pad, fmt):
        ctx.save_for_backward(x, w)
        ctx.cfg = (stride, pad, fmt)
        return F.conv2d(fmt.operand(x), fmt.operand(w), stride=stride, padding=pad)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        stride, pad, fmt = ctx.cfg
        g = fmt.operand(g)
        dx = conv2d_input(x.shape, fmt.operand(w), g, stride=stride, padding=pad)
        dw = conv2d_weight(fmt.operand(x), w.shape, g, stride=stride, padding=pad)
        return fmt.store_grad(dx), fmt.store_grad(dw), None, None, None


class Linear(torch.autograd.Function):
    """fp32 logits (f32 bias); the weight gradient in fp32, the input's in the format."""

    @staticmethod
    def forward(ctx, x, w, b, fmt):
        ctx.save_for_backward(x, w)
        ctx.fmt = fmt
        return fmt.operand(x) @ fmt.operand(w).t() + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        fmt = ctx.fmt
        gl = fmt.operand(fmt.store_grad(g))
        return fmt.store_grad(gl @ fmt.operand(w)), gl.t() @ fmt.operand(x), g.sum(0), None


class Net:
    """torchvision's ResNet-18/-50 as functions, its tensors named as models/resnet.cc does."""

    def __init__(self, depth, state, fmt):
        self.depth, self.fmt = depth, fmt
        self.p = {}
        for k, v in state.items():
            if v.dtype == torch.int64:
                continue
            t = v.to(fmt.dtype).clone()
            if not k.endswith(("running_mean", "running_var")):
                t.requires_grad_(True)
            self.p[k] = t
        self.acts = {}

    def keep(self, name, x):
        x = Store.apply(x, self.fmt)
        if x.requires_grad:
            x.retain_grad()
        self.acts[name] = x
        return x

    def conv(self, name, x, stride, pad):
        return self.keep(name, Conv.apply(x, self.p[name + ".weight"], stride, pad, self.fmt))

    def bn(self, name, x, train):
        p = self.p
        y = F.batch_norm(x, p[name + ".running_mean"], p[name + ".running_var"],
                         p[name + ".weight"], p[name + ".bias"], train, 0.1, 1e-5)
        return self.keep(name, y)

    def block(self, pre, x, stride, train):
        # BasicBlock: 3x3 (stride), 3x3. Bottleneck v1.5: 1x1, 3x3 (stride), 1x1.
        geo = [(stride, 1), (1, 1)] if self.depth < 50 else [(1, 0), (stride, 1), (1, 0)]
        names = ("conv1", "conv2", "conv3")[:len(geo)]
        y = x
        for i, (c, (s, pad)) in enumerate(zip(names, geo)):
            last = i == len(names) - 1
            y = self.conv(pre + c, y, s, pad)
            y = self.bn(pre + "bn" + c[-1], y, train)
            if not last:
                y = self.keep(pre + f"relu{i + 1}", F.relu(y))
        if pre + "downsample.0.weight" in self.p:
            x = self.conv(pre + "downsample.0", x, stride, 0)
            x = self.bn(pre + "downsample.1", x, train)
        y = self.keep(pre + "add", y + x)
        return self.keep(pre + f"relu{len(names)}", F.relu(y))

    def forward(self, images, train):
        self.acts = {}
        x = self.keep("input", images.to(self.fmt.dtype))
        x = self.conv("conv1", x, 2, 3)
        x = self.bn("bn1", x, train)
        x = self.keep("relu", F.relu(x))
        x = self.keep("maxpool", F.max_pool2d(x, 3, 2, 1))
        blocks = (2, 2, 2, 2) if self.depth < 50 else (3, 4, 6, 3)
        for s, n in enumerate(blocks):
            for b in range(n):
                x = self.block(f"layer{s + 1}.{b}.", x, 2 if s > 0 and b == 0 else 1, train)
        x = self.keep("avgpool", x.mean((2, 3)))
        y = Linear.apply(x, self.p["fc.weight"], self.p["fc.bias"], self.fmt)
        if y.requires_grad:
            y.retain_grad()
        self.acts["fc"] = y  # the logits: fp32 in every format
        return y


def step(case, fmt_name, plant=None):
    """One training step of `case` in a format: {(kind, tensor): value} and the loss scale."""
    depth, state, images, labels = case
    fmt = Fmt(fmt_name, plant)
    scale = 2.0 ** 16 if fmt_name == "f16" and "no-loss-scale" not in fmt.plant else 1.0
    while True:
        net = Net(depth, state, fmt)
        logits = net.forward(images, True)
        loss = F.cross_entropy(logits, labels, label_smoothing=SMOOTHING)
        (loss * scale).backward()
        grads = {k: v.grad / scale for k, v in net.p.items() if v.requires_grad}
        finite = all(bool(torch.isfinite(g).all()) for g in grads.values())
        if finite or scale == 1.0:
            break
        scale /= 2  # GradScaler: skip the step, halve the scale
    if "scale-conv1-gradient" in fmt.plant:  # a 1% slip
        grads["conv1.weight"] = grads["conv1.weight"] * 1.01
    if "half-conv1-gradient" in fmt.plant:  # half a gradient lost (a contribution missing)
        grads["conv1.weight"] = grads["conv1.weight"] * 0.5
    if "zero-conv1-gradient" in fmt.plant:  # a gradient never written
        grads["conv1.weight"] = grads["conv1.weight"] * 0.0
    out = {("loss", "loss"): loss.detach().reshape(1)}
    for name, a in net.acts.items():
        out[("activation", name)] = a.detach()
        if name != "input":
            out[("activation gradient", name)] = a.grad / scale
    for name, g in grads.items():
        out[("parameter gradient", name)] = g
    for name, t in net.p.items():
        if name.endswith(("running_mean", "running_var")):
            out[("running statistic", name)] = t.detach().clone()
    out[("logits", "logits")] = logits.detach()
    with torch.no_grad():
        out[("eval logits", "eval logits")] = net.forward(images, False)
    return out, scale


def error(got, ref, loss=False):
    """The suite's measures (backend_cases.h): max|diff| / max|ref| ("max"), and
    ||diff||_2 / ||ref||_2 ("norm"); the loss's |diff| / max(1, |ref|) for both."""
    ref, got = ref.to(torch.float64).flatten(), got.to(torch.float64).flatten()
    d = got - ref
    if loss:
        e = d.abs().max().item() / max(1.0, ref.abs().max().item())
        return e, e
    big, norm = ref.abs().max().item(), ref.norm().item()
    return (d.abs().max().item() / (big if big > 0 else 1.0),
            d.norm().item() / (norm if norm > 0 else 1.0))


def errors(got, ref):
    """{(kind, tensor): (max error, norm error)} of one run against fp64."""
    return {k: error(got[k], ref[k], k[0] == "loss") for k in ref}


def load_case(driver, tmp, depth, batch, size, itype):
    path = os.path.join(tmp, f"r{depth}_{batch}_{size}_{itype}.safetensors")
    subprocess.run([driver, str(depth), str(batch), str(size), itype, path], check=True)
    t = read_safetensors(path)[1]
    images, labels = t.pop("case.images"), t.pop("case.labels")
    return depth, t, images, labels


def row_errors(driver, tmp, cache, row, plant=None):
    """torch's errors at the row's format against fp64, the worse of its two convolution
    implementations (oneDNN's and its own), and the loss scale the f16 step ended with."""
    name, depth, batch, size, itype, fmt = row
    key = (depth, batch, size, itype)
    if key not in cache:
        case = load_case(driver, tmp, *key)
        cache[key] = (case, step(case, "f64")[0])
    case, ref = cache[key]
    worst, scales = {}, []
    for mkldnn in (True, False):
        torch.backends.mkldnn.enabled = mkldnn
        got, scale = step(case, fmt, plant)
        scales.append(scale)
        for k, e in errors(got, ref).items():
            w = worst.get(k, (0.0, 0.0))
            worst[k] = (max(w[0], e[0]), max(w[1], e[1]))
    torch.backends.mkldnn.enabled = True
    return worst, min(scales)


def worst_by_kind(errs, metric):
    """{kind: (worst error, its tensor)} for metric 0 (max) or 1 (norm)."""
    w = {}
    for (k, t), e in errs.items():
        if e[metric] >= w.get(k, (-1.0, ""))[0]:
            w[k] = (e[metric], t)
    return w


def parse_log(path):
    """{row: {(kind, tensor): error}} from a gtest log of the suite: every failure it lists, and
    each row's summary line (tensor "(worst)"; the loss from "loss GOT vs REFERENCE")."""
    out, row, pending = {}, None, None
    summary = re.compile(r"cuda (\S+): loss (\S+) vs (\S+); worst error activations (\S+) "
                         r"\(\d+ compared\), their gradients (\S+) \((\d+)\), "
                         r"parameter gradients (\S+);")
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"\[ RUN +\] Backends/WholeStep\.\w+/cuda_(\S+)", line)
        if m:
            row = m.group(1)
            out[row] = {}
            continue
        m = summary.match(line)
        if m and m.group(1) in out:
            got, ref = float(m.group(2)), float(m.group(3))
            e = out[m.group(1)]
            e[("loss", "loss")] = abs(got - ref) / max(1.0, abs(ref))
            e[("activation", "(worst)")] = float(m.group(4))
            if int(m.group(6)) > 0:
                e[("activation gradient", "(worst)")] = float(m.group(5))
            e[("parameter gradient", "(worst)")] = float(m.group(7))
            continue
        m = re.match(r"Expected: \(\w+\) < \(tol\), actual: (\S+) vs", line)
        if m:
            pending = float(m.group(1))
            continue
        if pending is not None and row is not None:
            if line.startswith("activation "):
                out[row][("activation", line.split()[1])] = pending
            elif line.startswith("gradient of "):
                t = line.split()[2]
                k = "parameter gradient" if t.endswith((".weight", ".bias")) else \
                    "activation gradient"
                out[row][(k, t)] = pending
            pending = None
    return out


HEADER = """// SPDX-License-Identifier: Apache-2.0
// Written by tests/train/conformance_bounds.py --write; do not edit (the ctest
// conformance_bounds_reproduce recomputes it). Per cuda row of backend_conformance_test and kind
// of tensor: torch's own worst error on that row's step at the row's number format against fp64
// (max |diff| / max |ref| and ||diff|| / ||ref||, the worse of its two convolution
// implementations), and the bound the suite holds the backend to: C = {c:g} times it, and at
// least C units of the rounding of what that kind is stored in.
#pragma once

namespace stoker::test {{

struct OracleBound {{
  const char* row;
  const char* kind;
  const char* tensor;            // "*": every tensor of the kind (the norm measure: where no
                                 // line names the tensor itself)
  double torch_max, torch_norm;  // torch's error
  double max, norm;              // the bounds
}};

// One line per bound, as the script writes and reads it.
// clang-format off
inline constexpr OracleBound kOracleBounds[] = {{
"""


# Low formats move single gradient tensors by up to ~30% (bias gradients are sums that cancel),
# so their worst per kind says little of the others: there the normalised measure is also bound
# per tensor. Two valid implementations agree on it within 2.3x per tensor (torch's own two,
# f16 and bf16 at the f16/bf16 rows' case), the max measure only within 5x, so per tensor it is
# the normalised one alone.
PER_TENSOR = ("activation gradient", "parameter gradient")


def bounds(driver):
    """[(row, kind, tensor or "*", torch max, torch norm, bound max, bound norm)], and notes."""
    out, notes, cache, done = [], [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for row in ROWS:
            key = row[1:]  # rows differing only in a layout compute the same thing
            if key not in done:
                done[key] = row_errors(driver, tmp, cache, row)
            errs, scale = done[key]
            wm, wn = worst_by_kind(errs, 0), worst_by_kind(errs, 1)
            for k in KINDS:
                floor = unit(row[5], k)
                bm = C * max(wm[k][0], floor)
                out.append((row[0], k, "*", wm[k][0], wn[k][0], bm, C * max(wn[k][0], floor)))
                if row[5] == "f32" or k not in PER_TENSOR:
                    continue
                for (kk, t), (em, en) in errs.items():
                    if kk == k:
                        out.append((row[0], k, t, em, en, bm, C * max(en, floor)))
            notes.append(f"{row[0]}: loss scale {scale:g}" if row[5] == "f16" else row[0])
    return out, notes


def write(path, table):
    with open(path, "w") as f:
        f.write(HEADER.format(c=C))
        for r, k, t, tm, tn, bm, bn in table:
            f.write(f'    {{"{r}", "{k}", "{t}", {tm:.3e}, {tn:.3e}, {bm:.3e}, {bn:.3e}}},\n')
        f.write("};\n// clang-format on\n\n}  // namespace stoker::test\n")


def read(path):
    """{(row, kind, tensor or "*"): (torch max, torch norm, bound max, bound norm)}."""
    pat = re.compile(r'\{"([^"]+)", "([^"]+)", "([^"]+)", ([^,]+), ([^,]+), ([^,]+), ([^,}]+)\},')
    return {(m[1], m[2], m[3]): tuple(float(m[i]) for i in range(4, 8))
            for m in pat.finditer(open(path).read())}


def bound(committed, row, kind, tensor, metric):
    """The bound the suite applies to one tensor: its own where it has one (norm only)."""
    own = committed.get((row, kind, tensor))
    return (own if own and metric == 1 else committed[(row, kind, "*")])[2 + metric]


def write_max(path, table):
    """--write-max: each entry the larger of the committed one and this machine's (the bounds
    must hold on every CPU the suite's oracle runs on)."""
    committed = read(path)
    merged = []
    for e in table:
        c = committed.get(e[:3])
        merged.append(e if c is None else e[:3] + tuple(max(a, b) for a, b in zip(e[3:], c)))
    write(path, merged)


def check(path, table):
    """The committed bounds are torch's: no tighter than half what torch gives here, and no
    looser than 4x. They are the largest over the CPUs they were made on (--write-max): torch's
    kernels round by the ISA (a tf32 row's layer4.1.bn2.weight norm bound: 9.3e-3 with AVX-512,
    2.5e-2 under ONEDNN_MAX_CPU_ISA=AVX2), and its two convolution implementations already
    differ by up to 1.7x per kind; a changed model, case, format or C moves the numbers far
    more."""
    committed, bad = read(path), []
    for r, k, t, tm, tn, bm, bn in table:
        c = committed.get((r, k, t))
        if c is None:
            bad.append(f"{r} {k} {t}: not in {path}")
            continue
        for name, got, was in (("max bound", bm, c[2]), ("norm bound", bn, c[3])):
            ratio = got / was if was > 0 else float("inf")
            if not 0.25 <= ratio <= 2.0:
                bad.append(f"{r} {k} {t} {name}: {got:.3e} here, {was:.3e} committed")
    extra = set(committed) - {e[:3] for e in table}
    bad += [f"{' '.join(e)}: in {path} but no longer computed" for e in sorted(extra)]
    return bad


# (row, planted bug, whether the row's bounds must catch it). What a row cannot catch is kept
# too: it says what the comparison can and cannot see at that format.
PLANTS = (
    ("r18_n4_40px_f32_nchw", "scale-conv1-gradient", True),
    ("r18_n4_40px_f32_nchw_tf32_compute_nchw", "scale-conv1-gradient", False),
    ("r18_n4_64px_f32_nchw_f16", "bf16-storage", True),
    ("r18_n4_64px_f32_nchw_f16", "no-loss-scale", False),
    ("r18_n4_64px_f32_nchw_bf16", "scale-conv1-gradient", False),
    ("r18_n4_64px_f32_nchw_bf16", "half-conv1-gradient", False),
    ("r18_n4_64px_f32_nchw_bf16", "zero-conv1-gradient", True),
)


def planted(driver, committed):
    """Each planted bug's errors against the committed bounds; failures where the outcome is
    not the expected one (caught or not)."""
    bad, cache, rows = [], {}, {r[0]: r for r in ROWS}
    with tempfile.TemporaryDirectory() as tmp:
        for name, plant, must in PLANTS:
            errs, scale = row_errors(driver, tmp, cache, rows[name], {plant})
            over = []
            for (k, t), e in errs.items():
                for m in (0, 1):
                    b = bound(committed, name, k, t, m)
                    if not e[m] < b:
                        over.append(f"{k} {t} {('max', 'norm')[m]} {e[m]:.2e} >= {b:.2e}")
            caught = bool(over)
            print(f"{name} with {plant} (loss scale {scale:g}): "
                  f"{'caught: ' + '; '.join(over[:3]) if caught else 'within every bound'}")
            if caught != must:
                bad.append(f"{name} with {plant}: {'caught' if caught else 'not caught'}, "
                           f"expected {'caught' if must else 'not caught'}")
    return bad


def judge(driver, log, committed):
    """Every failure a suite log lists, and each row's summary, beside torch and the bound."""
    found = parse_log(log)
    cache, rows = {}, {r[0]: r for r in ROWS}
    with tempfile.TemporaryDirectory() as tmp:
        for name, entries in found.items():
            if name not in rows:
                continue
            errs, scale = row_errors(driver, tmp, cache, rows[name])
            print(f"{name} (torch's f16 loss scale {scale:g})" if rows[name][5] == "f16" else name)
            for (k, t), g in sorted(entries.items()):
                b = committed[(name, k, "*")][2]
                torch_e = max(e[0] for (kk, _), e in errs.items() if kk == k) \
                    if t in ("(worst)", "loss") else errs[(k, t)][0]
                print(f"  {k:20s} {t:30s} gpu {g:.3e}  torch {torch_e:.3e}  bound {b:.3e}"
                      f"  {'inside' if g < b else 'OUTSIDE'}")


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("--write", "--write-max", "--check", "--judge",
                                                "--plant"):
        print("usage: conformance_bounds.py DRIVER --write|--write-max|--check FILE | --judge LOG"
              " | --plant",
              file=sys.stderr)
        sys.exit(2)
    driver, mode = sys.argv[1], sys.argv[2]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conformance_bounds.h")
    if mode in ("--write", "--write-max"):
        table, notes = bounds(driver)
        (write if mode == "--write" else write_max)(sys.argv[3], table)
        print("\n".join(notes))
        return
    if mode == "--judge":
        judge(driver, sys.argv[3], read(here))
        return
    if mode == "--plant":
        bad = planted(driver, read(here))
    else:
        bad = check(sys.argv[3], bounds(driver)[0])
    for b in bad:
        print("FAIL:", b)
    if bad:
        sys.exit(1)
    print("the planted bugs fare as expected" if mode == "--plant" else
          f"{sys.argv[3]} is what torch gives here")


if __name__ == "__main__":
    main()
