#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: Stoker's colour ops (augment/color_jitter.cc) and antialiased resize
# (augment/resize_antialias.cc), run through tests/augment/color_driver.cc, against
# torchvision 0.14 (Debian) and Pillow on real photographs (Debian's opencv-doc). Exit 77
# (skip) without torchvision or the photographs. Not a test of the loader's scheduling.
#
# Tolerances, in uint8 levels, and why:
#  brightness, contrast, saturation, grayscale: Stoker evaluates torchvision's tensor
#     formulas in the same float32 order and truncates as .to(uint8) does, so pixels are
#     equal: max 0. (The contrast mean is an integer sum below 2^24, exact in both.)
#  hue: the same float32 HSV round trip; torch's vectorised division and fmod may round a
#     last bit differently from scalar code, which moves a truncated value by one level:
#     max 1 level, at most 0.5% of values off.
#  ColorJitter as a whole (the loader's draw: random order and factors, then grayscale)
#     against torchvision's ops applied in the drawn order with the drawn factors: the hue
#     tolerance (max 1, 0.5% of values).
#  PIL path, reported only: torchvision on a PIL image runs PIL's ImageEnhance and 8-bit HSV,
#     which rounds differently (and quantises hue to 1/255 of a turn); its difference is
#     printed for the docs, not asserted.
#  resize antialias: the same coefficients, 22-bit fixed point and pass order as Pillow's
#     Resample.c: max 0 against Image.resize(BILINEAR) (torchvision's F.resize on PIL).
# The draws: factors within torchvision's ranges, and all 24 orders and the grayscale
# probability at their expected frequencies (chi-square / binomial, alpha 1e-4 each).
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    import numpy as np
    import torch
    import torchvision.transforms.functional as F
    from PIL import Image
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle here"
    skip(f"torchvision is not importable ({e}); install python3-torchvision")

PHOTOS = "/usr/share/doc/opencv-doc/examples/data"
NAMES = ["baboon.jpg", "fruits.jpg", "HappyFish.jpg", "building.jpg"]
driver = sys.argv[1]
failures = []


class Driver:
    def __init__(self, path, tmp):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.tmp = tmp

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline().strip()
        if not answer or answer.startswith("error"):
            sys.exit(f"driver failed on '{line}': {answer or 'no answer'}")
        return answer

    def raw(self, rgb):
        path = os.path.join(self.tmp, "in.raw")
        np.ascontiguousarray(rgb).tofile(path)
        return path

    def out(self, h, w):
        return np.fromfile(os.path.join(self.tmp, "out.raw"), dtype=np.uint8).reshape(h, w, 3)

    def op(self, rgb, name, factor):
        h, w = rgb.shape[:2]
        self.ask(f"op {self.raw(rgb)} {w} {h} {name} {factor!r} {self.tmp}/out.raw")
        return self.out(h, w)

    def jitter(self, rgb, seed, idx, b, c, s, hue, g):
        h, w = rgb.shape[:2]
        a = self.ask(f"jitter {self.raw(rgb)} {w} {h} {seed} {idx} {b} {c} {s} {hue} {g} "
                     f"{self.tmp}/out.raw").split()
        return self.out(h, w), [int(x) for x in a[:4]], [float(x) for x in a[4:8]], a[8] == "1"

    def resize(self, rgb, ow, oh):
        h, w = rgb.shape[:2]
        self.ask(f"resize {self.raw(rgb)} {w} {h} {ow} {oh} {self.tmp}/out.raw")
        return self.out(oh, ow)


def tensor_op(rgb, name, f):
    t = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()
    if name == "brightness":
        t = F.adjust_brightness(t, f)
    elif name == "contrast":
        t = F.adjust_contrast(t, f)
    elif name == "saturation":
        t = F.adjust_saturation(t, f)
    elif name == "hue":
        t = F.adjust_hue(t, f)
    else:
        t = F.rgb_to_grayscale(t, num_output_channels=3)
    return t.permute(1, 2, 0).numpy()


def pil_op(rgb, name, f):
    im = Image.fromarray(rgb)
    fn = {"brightness": F.adjust_brightness, "contrast": F.adjust_contrast,
          "saturation": F.adjust_saturation, "hue": F.adjust_hue}.get(name)
    im = fn(im, f) if fn else F.rgb_to_grayscale(im, num_output_channels=3)
    return np.asarray(im)


def diff(a, b):
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    return int(d.max()), float(d.mean()), float((d > 0).mean())


def within(what, a, b, max_levels, max_fraction):
    m, mean, frac = diff(a, b)
    ok = m <= max_levels and frac <= max_fraction
    print(f"  {what}: max {m} mean {mean:.4f} differing {100 * frac:.3f}% "
          f"{'ok' if ok else 'FAIL'}")
    if not ok:
        failures.append(f"{what}: max {m} levels, {100 * frac:.3f}% of values differ "
                        f"(tolerance max {max_levels}, {100 * max_fraction:.2f}%)")


def photos():
    out = []
    for n in NAMES:
        p = os.path.join(PHOTOS, n)
        if os.path.exists(p):
            out.append((n, np.array(Image.open(p).convert("RGB"))))
    return out


def check_ops(drv, images):
    cases = [("brightness", [0.0, 0.6, 1.37, 1.8]), ("contrast", [0.0, 0.6, 1.37, 1.8]),
             ("saturation", [0.0, 0.6, 1.37, 1.8]), ("hue", [-0.5, -0.23, 0.02, 0.1, 0.41]),
             ("grayscale", [0])]
    for name, factors in cases:
        for f in factors:
            for n, rgb in images:
                ours = drv.op(rgb, name, f)
                exact = name != "hue"
                within(f"{name} {f} {n} vs tensor", ours, tensor_op(rgb, name, f),
                       0 if exact else 1, 0 if exact else 0.005)
            m, mean, _ = diff(ours, pil_op(rgb, name, f))
            print(f"    (PIL path, {n}: max {m} mean {mean:.3f}, not asserted)")


def check_jitter(drv, images):
    """The loader's whole draw (order, factors, grayscale) against torchvision's ops in the
    drawn order with the drawn factors."""
    ops = [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]
    seen_gray = 0
    for idx in range(24):
        n, rgb = images[idx % len(images)]
        ours, order, factors, gray = drv.jitter(rgb, 7, idx, 0.4, 0.4, 0.4, 0.1, 0.25)
        t = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()
        for k in order:
            t = ops[k](t, factors[k])
        if gray:
            t = F.rgb_to_grayscale(t, num_output_channels=3)
            seen_gray += 1
        within(f"jitter sample {idx} {n} order {order} gray {int(gray)}", ours,
               t.permute(1, 2, 0).numpy(), 1, 0.005)


def check_draws(drv, tmp):
    n, (b, c, s, h, g) = 24000, (0.4, 0.7, 1.5, 0.3, 0.2)
    path = os.path.join(tmp, "draws.txt")
    drv.ask(f"draws 3 {n} {b} {c} {s} {h} {g} {path}")
    d = np.loadtxt(path).reshape(-1, 9)
    ranges = [(1 - b, 1 + b), (1 - c, 1 + c), (0, 1 + s), (-h, h)]
    for k, (name, (lo, hi)) in enumerate(zip(["brightness", "contrast", "saturation", "hue"],
                                             ranges)):
        v = d[:, 4 + k]
        # Uniform on [lo, hi): every value inside, mean and spread as a uniform's.
        mean_err = abs(v.mean() - (lo + hi) / 2) / ((hi - lo) / np.sqrt(12 * n))
        ok = v.min() >= lo and v.max() < hi and mean_err < 4.5
        print(f"  draws {name}: [{v.min():.4f}, {v.max():.4f}] in [{lo}, {hi}), mean off by "
              f"{mean_err:.2f} sigma {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"draws {name}: range [{v.min()}, {v.max()}] or mean "
                            f"({mean_err:.1f} sigma) not uniform on [{lo}, {hi})")
    orders = {}
    for row in d[:, :4].astype(int):
        orders[tuple(row)] = orders.get(tuple(row), 0) + 1
    expected = n / 24
    chi2 = sum((v - expected) ** 2 / expected for v in orders.values())
    chi2 += (24 - len(orders)) * expected
    # chi-square with 23 degrees of freedom: P(X > 62) is about 2e-5.
    ok = len(orders) == 24 and chi2 < 62
    print(f"  draws order: {len(orders)} of 24 permutations, chi2 {chi2:.1f} (limit 62) "
          f"{'ok' if ok else 'FAIL'}")
    if not ok:
        failures.append(f"draws order: {len(orders)} permutations, chi2 {chi2:.1f}")
    gz = (d[:, 8].mean() - g) / np.sqrt(g * (1 - g) / n)
    ok = abs(gz) < 4.5
    print(f"  draws grayscale: {d[:, 8].mean():.4f} (p {g}, {gz:.2f} sigma) "
          f"{'ok' if ok else 'FAIL'}")
    if not ok:
        failures.append(f"draws grayscale: frequency {d[:, 8].mean():.4f}, p {g}")


def check_resize(drv, images):
    # Reductions 1.3x..8x (the 8x case is the known aliasing one), a non-integer ratio, an
    # anisotropic one, one axis unchanged, and an upscale.
    for n, rgb in images:
        h, w = rgb.shape[:2]
        for ow, oh in [(w * 10 // 13, h * 10 // 13), (w // 2, h // 2), (w // 8, h // 8),
                       (224, 224), (w // 3, h), (w, h // 5), (w * 3 // 2, h * 5 // 4)]:
            ours = drv.resize(rgb, ow, oh)
            ref = np.asarray(F.resize(Image.fromarray(rgb), [oh, ow],
                                      F.InterpolationMode.BILINEAR))
            within(f"resize antialias {n} {w}x{h} -> {ow}x{oh} vs PIL", ours, ref, 0, 0)


with tempfile.TemporaryDirectory() as tmp:
    images = photos()
    if len(images) < 2:
        skip(f"fewer than two photographs in {PHOTOS} (Debian: opencv-doc)")
    drv = Driver(driver, tmp)
    check_ops(drv, images)
    check_jitter(drv, images)
    check_draws(drv, tmp)
    check_resize(drv, images)
    drv.p.stdin.close()
    drv.p.wait()
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("ok: colour ops, ColorJitter draws and the antialiased resize match torchvision/Pillow")
