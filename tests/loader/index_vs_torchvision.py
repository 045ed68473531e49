#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Oracle test: Stoker's ImageFolder index (order, paths, labels) equals torchvision's
# datasets.ImageFolder on a tree with awkward names. Exit 77 (skip; tests/skip_policy.py) without torchvision.
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip  # noqa: E402

try:
    from torchvision.datasets import ImageFolder
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle here"
    skip(f"torchvision is not importable ({e}); install python3-torchvision")

stoker = sys.argv[1]
names = [
    "b/2.jpg", "b/10.jpg", "b/1.JPEG", "a/z.png", "a/sub/x.jpg", "a/sub-y/q.jpg", "a/A.jpg",
    "B/only.webp", "a/readme.txt", "a/sub/deeper/y.bmp", "a/sub/deeper/Z.tif", "C c/x y.jpeg",
    "C c/é.jpg", "a/e.PnG", "b/_u.ppm", "b/-m.pgm", "b/0.tiff",
]
with tempfile.TemporaryDirectory() as root:
    for n in names:
        os.makedirs(os.path.dirname(os.path.join(root, n)), exist_ok=True)
        with open(os.path.join(root, n), "wb") as f:
            f.write(b"x")
    listing = os.path.join(root, "..", os.path.basename(root) + ".list")
    subprocess.run([stoker, "index", root, "--out", listing], check=True)
    with open(listing, encoding="utf-8") as f:
        # "# class <label> <name>" lines keep the class names; the samples follow.
        ours = [(line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1]))
                for line in f.read().splitlines() if not line.startswith("#")]
    os.remove(listing)
    ds = ImageFolder(root, loader=lambda p: p)
    # The list's paths are relative to the list file's directory.
    theirs = [(os.path.relpath(p, os.path.dirname(listing)), label) for p, label in ds.samples]
    if ours != theirs:
        print("MISMATCH\n stoker:      ", ours, "\n torchvision: ", theirs)
        sys.exit(1)
    print(f"ok: {len(ours)} samples in torchvision's order with its labels; classes {ds.classes}")
