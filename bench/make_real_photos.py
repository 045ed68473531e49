# SPDX-License-Identifier: Apache-2.0
"""Derives bench/peers.sh's real-photo set from the photographs Debian ships in opencv-doc.

Each output image is a random crop (25-100% of the area, aspect 3/4-4/3) of one of the
source photos below, resized so its short side is --short-side (256; PIL, bicubic) and saved
as a quality-90 JPEG (4:2:0). Above 256 px only sources at least that large are used, and a
crop smaller than that is widened (within the photo) until it is: every image is a reduction
of a real photograph, never an enlargement (at 1024 px that leaves the two 1282x1110 aloe
photos, so crops there cover most of the photo). One class folder per source photo (ImageFolder layout). The choices
come from random.Random(seed): the same sources, count, seed and Pillow give the same files.
Logos, renders, drawings, a painting and the chessboard calibration shots are left out.
It is a real-photo texture sample for decoding speed, not a data set to train on.
"""
import argparse
import json
import math
import os
import random
import sys

from PIL import Image

SOURCE_DIR = "/usr/share/doc/opencv-doc/examples/data"
# Photographs of real scenes (checked by eye), each at least 340 px on its short side.
PHOTOS = [
    "aero1.jpg", "aero3.jpg", "aloeL.jpg", "aloeR.jpg", "apple.jpg", "baboon.jpg", "board.jpg",
    "building.jpg", "butterfly.jpg", "ela_modified.jpg", "ela_original.jpg", "fruits.jpg",
    "home.jpg", "left.jpg", "leuvenA.jpg", "leuvenB.jpg", "licenseplate_motion.jpg",
    "messi5.jpg", "orange.jpg", "right.jpg", "squirrel_cls.jpg", "stuff.jpg",
    "text_defocus.jpg", "text_motion.jpg",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="output root (created; one folder per source photo)")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--source", default=SOURCE_DIR)
    ap.add_argument("--short-side", type=int, default=256,
                    help="short side of every output image (default 256)")
    a = ap.parse_args()
    if a.count < 1:
        sys.exit(f"make_real_photos.py: --count must be at least 1, got {a.count}")
    if a.short_side < 16:
        sys.exit(f"make_real_photos.py: --short-side must be at least 16, got {a.short_side}")
    missing = [p for p in PHOTOS if not os.path.isfile(os.path.join(a.source, p))]
    if missing:
        sys.exit(f"make_real_photos.py: {a.source} lacks {', '.join(missing)} "
                 "(apt-get install opencv-doc, or scripts/deps.sh --bench)")

    rng = random.Random(a.seed)
    side = a.short_side
    names, sources = [], []
    for p in PHOTOS:
        img = Image.open(os.path.join(a.source, p)).convert("RGB")
        # At 256 px every source is used as before (the set stays the same files).
        if side <= 256 or min(img.size) >= side:
            names.append(p)
            sources.append(img)
    if not sources:
        sys.exit(f"make_real_photos.py: no source photo has a short side of {side} px or more")
    for i in range(a.count):
        k = i % len(sources)
        img = sources[k]
        w, h = img.size
        area = w * h * rng.uniform(0.25, 1.0)
        aspect = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw = min(w, max(1, round(math.sqrt(area * aspect))))
        ch = min(h, max(1, round(math.sqrt(area / aspect))))
        if side > 256 and min(cw, ch) < side:
            grow = side / min(cw, ch)  # widen, never enlarge the pixels
            cw, ch = min(w, math.ceil(cw * grow)), min(h, math.ceil(ch * grow))
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        s = side / min(cw, ch)
        crop = img.resize((max(side, round(cw * s)), max(side, round(ch * s))),
                          Image.BICUBIC, box=(x, y, x + cw, y + ch))
        d = os.path.join(a.out, os.path.splitext(names[k])[0])
        os.makedirs(d, exist_ok=True)
        crop.save(os.path.join(d, f"{i:05d}.jpg"), quality=90, subsampling=2)
    with open(os.path.join(a.out, ".real-photos.json"), "w") as f:
        json.dump({"sources": len(sources), "source_dir": a.source, "count": a.count,
                   "seed": a.seed, "short_side": side, "pillow": Image.__version__}, f)
    print(f"make_real_photos.py: {a.count} images from {len(sources)} photos in {a.out}")


if __name__ == "__main__":
    main()
