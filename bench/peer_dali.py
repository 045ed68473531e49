# SPDX-License-Identifier: Apache-2.0
"""NVIDIA DALI (PyPI's nvidia-dali-cuda130) in CPU-only mode as a peer of bench/peers.sh.

A pipeline without a device (device_id=None): fn.readers.file (shuffled), then either
  decode  fn.decoders.image(device="cpu") of the whole image + fn.random_resized_crop(224)
  roi     fn.decoders.image_random_crop(device="cpu"): libjpeg-turbo decodes only the
          RandomResizedCrop window (DALI's own fused path), + fn.resize to 224x224
then fn.crop_mirror_normalize (random flip; ImageNet mean/std to f32, or u8 as is), CHW,
batch 64, num_threads = --threads. Outputs are copied into one NumPy array per batch, as a
user feeding a framework would. --runs lists MODE:DTYPE runs, made one after the other in
this process. One JSON line per run (peer_common.py).
"""
import sys

import numpy as np

import peer_common

try:
    import nvidia.dali as dali
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
except ImportError as e:
    sys.exit(f"peer_dali.py: {e} (interpreter {sys.executable}): run it with bench/peers.sh's venv")


def build(a):
    @dali.pipeline_def(batch_size=a.batch, num_threads=a.threads, device_id=None,
                       seed=1, prefetch_queue_depth=2)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=a.data, random_shuffle=True, name="reader")
        if a.mode == "decode":
            img = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            img = fn.random_resized_crop(img, size=[224, 224], random_area=[0.08, 1.0],
                                         random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10)
        else:
            img = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                                random_area=[0.08, 1.0],
                                                random_aspect_ratio=[3 / 4, 4 / 3],
                                                num_attempts=10)
            img = fn.resize(img, resize_x=224, resize_y=224)
        flip = fn.random.coin_flip(probability=0.5)
        if a.dtype == "f32":
            img = fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW",
                                           mean=[255 * m for m in peer_common.MEAN],
                                           std=[255 * s for s in peer_common.STD], mirror=flip)
        else:
            img = fn.crop_mirror_normalize(img, dtype=types.UINT8, output_layout="CHW",
                                           mirror=flip)
        return img, labels

    p = pipe()
    p.build()
    return p


def main():
    ap = peer_common.parser(__doc__)
    ap.add_argument("--runs", default="decode:f32",
                    help="comma-separated MODE:DTYPE (decode|roi, f32|u8)")
    a = ap.parse_args()
    peer_common.check_data(a, "peer_dali.py")
    runs = [spec.split(":") for spec in a.runs.split(",")]
    for r in runs:
        if len(r) != 2 or r[0] not in ("decode", "roi") or r[1] not in ("f32", "u8"):
            sys.exit(f"peer_dali.py: bad --runs entry '{':'.join(r)}': expected MODE:DTYPE")
    for a.mode, a.dtype in runs:
        run(a)


def run(a):
    p = build(a)
    epoch_batches = p.epoch_size("reader") // a.batch
    want = np.float32 if a.dtype == "f32" else np.uint8

    def epoch():
        # The reader wraps around by itself; an "epoch" here is just its size in batches.
        for _ in range(max(1, epoch_batches)):
            img, _labels = p.run()
            yield img.as_array()

    def check(x):
        if x.dtype != want or x.shape[1:] != (3, 224, 224):
            sys.exit(f"peer_dali.py: unexpected batch {x.dtype} {x.shape}")
        return x.shape[0], x.shape, x.dtype

    res = peer_common.measure(epoch, a, check)
    peer_common.emit(a, "dali", f"{a.mode} cpu", res, {"dali": dali.__version__})


if __name__ == "__main__":
    main()
