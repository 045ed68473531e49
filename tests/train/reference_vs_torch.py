#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: every naive reference layer (train/reference/) forward and backward against
# torch on small random shapes, through the reference_cases driver. Each output and gradient
# must be within 1e-5 of torch's in fp32 and of torch's in fp64 (the exact answer), by the
# error max|ours - torch| / max|torch|. Exit 77 (skip; tests/skip_policy.py) when torch cannot be imported.
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle here"
    skip(f"torch is not importable ({e}); install python3-torch and run with "
          "/usr/bin/python3")

driver = sys.argv[1]
TOL = 1e-5
torch.manual_seed(0)
torch.set_num_threads(1)
failures = []
worst = {}  # layer -> largest error seen, for the summary


def write_tensors(path, tensors):
    with open(path, "wb") as f:
        for name, t in tensors.items():
            t = t.detach().to(torch.float32).contiguous()
            f.write(struct.pack("<i", len(name)) + name.encode())
            f.write(struct.pack("<i", t.dim()) + struct.pack(f"<{t.dim()}q", *t.shape))
            f.write(t.numpy().tobytes())


def read_tensors(path):
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (n,) = struct.unpack_from("<i", data, pos)
        name = data[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        (rank,) = struct.unpack_from("<i", data, pos)
        dims = struct.unpack_from(f"<{rank}q", data, pos + 4)
        pos += 4 + 8 * rank
        count = 1
        for d in dims:
            count *= d
        values = torch.frombuffer(bytearray(data[pos:pos + 4 * count]), dtype=torch.float32)
        out[name] = values.reshape(dims)
        pos += 4 * count
    return out


def run(layer, inputs, **args):
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in"), os.path.join(d, "out")
        write_tensors(inp, inputs)
        subprocess.run([driver, layer, inp, outp, *(f"{k}={v}" for k, v in args.items())],
                       check=True)
        return read_tensors(outp)


def grads(fn, inputs, dout, dtype):
    """fn's output and the gradients of sum(output * dout) w.r.t. each input, in dtype."""
    leaves = {k: v.detach().to(dtype).requires_grad_(True) for k, v in inputs.items()}
    out = fn(**leaves)
    out.backward(dout.to(dtype))
    return out.detach(), {k: v.grad for k, v in leaves.items()}


def compare(case, name, ours, ref32, ref64):
    for label, ref in (("fp32", ref32), ("fp64", ref64)):
        ref = ref.detach().to(torch.float64)
        if tuple(ours.shape) != tuple(ref.shape):
            failures.append(f"{case} {name}: shape {tuple(ours.shape)} vs {tuple(ref.shape)}")
            print("FAIL:", failures[-1])
            return
        scale = ref.abs().max().item()
        err = (ours.to(torch.float64) - ref).abs().max().item() / (scale if scale > 0 else 1.0)
        layer = case.split()[0]
        worst[layer] = max(worst.get(layer, 0.0), err)
        status = "ok" if err < TOL else "FAIL"
        print(f"  {case:44s} {name:12s} vs torch {label}: {err:.2e} {status}")
        if err >= TOL:
            failures.append(f"{case} {name} vs torch {label}: error {err:.2e} >= {TOL}")


def both(fn, inputs, dout):
    return grads(fn, inputs, dout, torch.float32), grads(fn, inputs, dout, torch.float64)


def check_conv(n, c, h, w, k, kh, kw, stride, pad):
    x, wt = torch.randn(n, c, h, w), torch.randn(k, c, kh, kw) * 0.3
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    dout = torch.randn(n, k, oh, ow)
    got = run("conv", {"x": x, "w": wt, "dout": dout}, stride=stride, pad=pad)
    fn = lambda x, w: F.conv2d(x, w, stride=stride, padding=pad)  # noqa: E731
    (o32, g32), (o64, g64) = both(fn, {"x": x, "w": wt}, dout)
    case = f"conv {n}x{c}x{h}x{w} k{k} {kh}x{kw}/s{stride}/p{pad}"
    compare(case, "out", got["out"], o32, o64)
    compare(case, "dx", got["dx"], g32["x"], g64["x"])
    compare(case, "dweight", got["dw"], g32["w"], g64["w"])


def check_batchnorm(n, c, h, w, shift):
    x = torch.randn(n, c, h, w) * 2 + shift
    gamma, beta = torch.rand(c) + 0.5, torch.randn(c)
    rm, rv = torch.randn(c), torch.rand(c) + 0.5
    dout = torch.randn(n, c, h, w)
    got = run("batchnorm", {"x": x, "gamma": gamma, "beta": beta, "running_mean": rm,
                            "running_var": rv, "dout": dout}, eps=1e-5, momentum=0.1)
    case = f"batchnorm {n}x{c}x{h}x{w} mean {shift}"
    refs = []
    for dtype in (torch.float32, torch.float64):
        bn = torch.nn.BatchNorm2d(c, eps=1e-5, momentum=0.1).to(dtype)
        with torch.no_grad():
            bn.weight.copy_(gamma)
            bn.bias.copy_(beta)
            bn.running_mean.copy_(rm)
            bn.running_var.copy_(rv)
        bn.eval()
        with torch.no_grad():
            infer = bn(x.to(dtype))
        bn.train()
        xi = x.detach().to(dtype).requires_grad_(True)
        out = bn(xi)
        out.backward(dout.to(dtype))
        refs.append({"out": out.detach(), "out_infer": infer, "dx": xi.grad,
                     "dgamma": bn.weight.grad, "dbeta": bn.bias.grad,
                     "running_mean": bn.running_mean, "running_var": bn.running_var})
    for name in ("out", "out_infer", "running_mean", "running_var", "dx", "dgamma", "dbeta"):
        compare(case, name, got[name], refs[0][name], refs[1][name])


def check_relu(shape):
    x = torch.randn(*shape)
    x.view(-1)[:3] = 0.0  # the kink itself: torch's gradient there is 0
    dout = torch.randn(*shape)
    got = run("relu", {"x": x, "dout": dout})
    (o32, g32), (o64, g64) = both(lambda x: F.relu(x), {"x": x}, dout)
    case = f"relu {'x'.join(map(str, shape))}"
    compare(case, "out", got["out"], o32, o64)
    compare(case, "dx", got["dx"], g32["x"], g64["x"])


def check_add(shape):
    a, b, dout = torch.randn(*shape), torch.randn(*shape), torch.randn(*shape)
    got = run("add", {"a": a, "b": b, "dout": dout})
    (o32, g32), (o64, g64) = both(lambda a, b: a + b, {"a": a, "b": b}, dout)
    case = f"add {'x'.join(map(str, shape))}"
    compare(case, "out", got["out"], o32, o64)
    compare(case, "da", got["da"], g32["a"], g64["a"])
    compare(case, "db", got["db"], g32["b"], g64["b"])


def check_maxpool(n, c, h, w, k, stride, pad, ties):
    # With ties, small integers make many windows share their maximum: the gradient must go
    # where torch sends it (the first maximum in scan order).
    x = torch.randint(0, 3, (n, c, h, w)).float() if ties else torch.randn(n, c, h, w)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    dout = torch.randn(n, c, oh, ow)
    got = run("maxpool", {"x": x, "dout": dout}, k=k, stride=stride, pad=pad)
    fn = lambda x: F.max_pool2d(x, k, stride, pad)  # noqa: E731
    (o32, g32), (o64, g64) = both(fn, {"x": x}, dout)
    case = f"maxpool {n}x{c}x{h}x{w} {k}x{k}/s{stride}/p{pad}{' ties' if ties else ''}"
    compare(case, "out", got["out"], o32, o64)
    compare(case, "dx", got["dx"], g32["x"], g64["x"])


def check_avgpool(n, c, h, w):
    x, dout = torch.randn(n, c, h, w), torch.randn(n, c)
    got = run("avgpool", {"x": x, "dout": dout})
    fn = lambda x: torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)  # noqa: E731
    (o32, g32), (o64, g64) = both(fn, {"x": x}, dout)
    case = f"avgpool {n}x{c}x{h}x{w}"
    compare(case, "out", got["out"], o32, o64)
    compare(case, "dx", got["dx"], g32["x"], g64["x"])


def check_linear(n, fin, fout):
    x, wt, b = torch.randn(n, fin), torch.randn(fout, fin) * 0.1, torch.randn(fout)
    dout = torch.randn(n, fout)
    got = run("linear", {"x": x, "w": wt, "b": b, "dout": dout})
    (o32, g32), (o64, g64) = both(F.linear, {"input": x, "weight": wt, "bias": b}, dout)
    case = f"linear {n}x{fin}->{fout}"
    compare(case, "out", got["out"], o32, o64)
    compare(case, "dx", got["dx"], g32["input"], g64["input"])
    compare(case, "dweight", got["dw"], g32["weight"], g64["weight"])
    compare(case, "dbias", got["db"], g32["bias"], g64["bias"])


def check_cross_entropy(n, k, smoothing, scale):
    logits, target = torch.randn(n, k) * scale, torch.randint(0, k, (n,))
    got = run("cross_entropy", {"logits": logits, "target": target.float()},
              label_smoothing=smoothing)
    fn = lambda logits: F.cross_entropy(logits, target, label_smoothing=smoothing)  # noqa: E731
    (l32, g32), (l64, g64) = both(fn, {"logits": logits}, torch.tensor(1.0))
    case = f"cross_entropy {n}x{k} smoothing {smoothing} scale {scale}"
    compare(case, "loss", got["loss"], l32.reshape(1), l64.reshape(1))
    compare(case, "dlogits", got["dlogits"], g32["logits"], g64["logits"])


check_conv(2, 3, 9, 9, 4, 7, 7, 2, 3)    # the stem's shape, small
check_conv(2, 5, 8, 8, 6, 3, 3, 1, 1)    # 3x3, same size
check_conv(2, 4, 8, 7, 6, 3, 3, 2, 1)    # 3x3 stride 2 (v1.5 bottleneck), odd width
check_conv(3, 6, 6, 6, 4, 1, 1, 1, 0)    # bottleneck 1x1
check_conv(2, 4, 7, 7, 8, 1, 1, 2, 0)    # downsample 1x1 stride 2
check_conv(1, 2, 6, 5, 3, 3, 2, 2, 1)    # non-square kernel
check_batchnorm(4, 3, 5, 5, 0.0)
check_batchnorm(2, 4, 3, 2, 5.0)         # |mean| >> std
check_batchnorm(8, 2, 1, 1, -1.0)        # ResNet's last stage at 32 px: 1x1 maps
check_relu((2, 3, 4, 5))
check_add((2, 3, 4, 5))
check_maxpool(2, 3, 8, 8, 3, 2, 1, False)
check_maxpool(2, 3, 7, 9, 3, 2, 1, True)
check_maxpool(1, 2, 6, 6, 2, 2, 0, True)
check_maxpool(1, 2, 5, 5, 3, 1, 1, True)
check_avgpool(2, 5, 7, 7)
check_avgpool(3, 4, 1, 1)
check_linear(4, 16, 10)
check_linear(1, 3, 1)
for smoothing in (0.0, 0.1):
    check_cross_entropy(8, 10, smoothing, 1.0)
    check_cross_entropy(4, 7, smoothing, 30.0)  # confident logits: probabilities near 0 and 1

print("worst error per layer: " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
if failures:
    print(f"{len(failures)} FAILURES")
    sys.exit(1)
print("all layers agree with torch")
