# SPDX-License-Identifier: Apache-2.0
"""FFCV (PyPI's ffcv) as a peer of bench/peers.sh: its .beton writer and its loader.

The .beton is written once per dataset (--beton; kept when it exists): RGBImageField in JPEG
mode at full resolution. FFCV re-encodes every image (OpenCV, quality 90) when it writes, so
its JPEGs are not byte-identical to the dataset's. The loader: random order, os_cache=True,
num_workers = --threads, RandomResizedCropRGBImageDecoder((224, 224)) (it decodes the whole
JPEG with libjpeg-turbo, then crops and resizes), RandomHorizontalFlip, NormalizeImage to f32
(or the u8 pixels), ToTensor, ToTorchImage(channels_last=False): NCHW like the others.
--dtypes lists the runs, made one after the other in this process (numba compiles once).
One JSON line per run (peer_common.py).
"""
import os
import sys
import time
from importlib.metadata import version

import numpy as np

import peer_common

try:
    import torch
    from ffcv.fields import IntField, RGBImageField
    from ffcv.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import NormalizeImage, RandomHorizontalFlip, ToTensor, ToTorchImage
    from ffcv.writer import DatasetWriter
    from torchvision import datasets
except ImportError as e:
    sys.exit(f"peer_ffcv.py: {e} (interpreter {sys.executable}): run it with bench/peers.sh's venv")


def write_beton(a):
    ds = datasets.ImageFolder(a.data)  # (PIL image, label) pairs, ImageFolder's order
    tmp = a.beton + ".partial"
    t = time.perf_counter()
    w = DatasetWriter(tmp, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90),
                            "label": IntField()}, num_workers=a.threads)
    w.from_indexed_dataset(ds)
    os.replace(tmp, a.beton)  # a beton that exists is a complete one
    print(f"ffcv: wrote {a.beton} ({len(ds)} images, {os.path.getsize(a.beton) / 1e6:.0f} MB) "
          f"in {time.perf_counter() - t:.0f} s", flush=True)


def main():
    ap = peer_common.parser(__doc__)
    ap.add_argument("--beton", required=True, help="the dataset's .beton (written if absent)")
    ap.add_argument("--dtypes", default="f32", help="comma-separated f32|u8")
    a = ap.parse_args()
    peer_common.check_data(a, "peer_ffcv.py")
    dtypes = a.dtypes.split(",")
    if any(d not in ("f32", "u8") for d in dtypes):
        sys.exit(f"peer_ffcv.py: bad --dtypes '{a.dtypes}': expected f32 and/or u8")
    if not os.path.exists(a.beton):
        write_beton(a)
    for a.dtype in dtypes:
        run(a)


def run(a):

    img = [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip()]
    if a.dtype == "f32":
        img.append(NormalizeImage(np.array(peer_common.MEAN) * 255,
                                  np.array(peer_common.STD) * 255, np.float32))
    img += [ToTensor(), ToTorchImage(channels_last=False)]
    loader = Loader(a.beton, batch_size=a.batch, num_workers=a.threads,
                    order=OrderOption.RANDOM, os_cache=True, drop_last=True,
                    pipelines={"image": img, "label": [IntDecoder(), ToTensor()]})
    want = torch.float32 if a.dtype == "f32" else torch.uint8

    def check(b):
        x = b[0]
        if x.dtype != want or tuple(x.shape[1:]) != (3, 224, 224) or not x.is_contiguous():
            sys.exit(f"peer_ffcv.py: unexpected batch {x.dtype} {tuple(x.shape)} "
                     f"contiguous={x.is_contiguous()}")
        return x.shape[0], tuple(x.shape), x.dtype

    res = peer_common.measure(lambda: loader, a, check)
    peer_common.emit(a, "ffcv", "jpg", res, {"ffcv": version("ffcv"), "torch": torch.__version__})


if __name__ == "__main__":
    main()
