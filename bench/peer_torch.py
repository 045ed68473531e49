# SPDX-License-Identifier: Apache-2.0
"""PyTorch DataLoader + torchvision (the venv's, from PyPI) as a peer of bench/peers.sh.

Two decode paths, each RandomResizedCrop(224) + horizontal flip, then ToTensor + Normalize
(f32) or the crop's raw bytes (u8), NCHW, batch 64, DataLoader(num_workers=--workers):
  pil   ImageFolder's stock path: PIL decodes the whole image, torchvision crops and resizes it
  tvio  torchvision.io.decode_jpeg on the file's bytes (libjpeg-turbo, whole image), then the
        tensor transforms (transforms.v2)
--runs lists the runs, PATH:WORKERS:DTYPE each, made one after the other in this process
(one interpreter start for all). One JSON line per run (peer_common.py). Not the Debian-torch baseline of loader_vs_torchvision.sh.
"""
import os
import sys

import peer_common

try:
    import PIL
    import torch
    import torchvision
    from torchvision import datasets, io, transforms
    from torchvision.transforms import v2
except ImportError as e:
    sys.exit(f"peer_torch.py: {e} (interpreter {sys.executable}): run it with bench/peers.sh's venv")


class TvioFolder(torch.utils.data.Dataset):
    """ImageFolder's file list and labels, decoded by torchvision.io instead of PIL."""

    def __init__(self, root, transform):
        self.samples = datasets.ImageFolder(root).samples
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        img = io.decode_jpeg(io.read_file(path), mode=io.ImageReadMode.RGB)
        return self.transform(img), label


def one_thread(_worker_id):
    torch.set_num_threads(1)


def main():
    ap = peer_common.parser(__doc__)
    ap.add_argument("--runs", default="pil:0:f32",
                    help="comma-separated PATH:WORKERS:DTYPE (pil|tvio, num_workers, f32|u8)")
    a = ap.parse_args()
    peer_common.check_data(a, "peer_torch.py")
    # One intra-op thread per process: with N workers the N processes are the N cores, with 0
    # the main process alone decodes (the `serial` reader's counterpart).
    torch.set_num_threads(1)
    runs = []
    for spec in a.runs.split(","):
        parts = spec.split(":")
        if (len(parts) != 3 or parts[0] not in ("pil", "tvio") or not parts[1].isdigit()
                or parts[2] not in ("f32", "u8")):
            sys.exit(f"peer_torch.py: bad --runs entry '{spec}': expected PATH:WORKERS:DTYPE")
        runs.append((parts[0], int(parts[1]), parts[2]))
    for path, workers, dtype in runs:
        a.path, a.workers, a.dtype, a.threads = path, workers, dtype, max(1, workers)
        run(a)


def run(a):

    norm = [transforms.Normalize(peer_common.MEAN, peer_common.STD)]
    if a.path == "pil":
        tail = [transforms.ToTensor()] + norm if a.dtype == "f32" else [transforms.PILToTensor()]
        tf = transforms.Compose([transforms.RandomResizedCrop(224),
                                 transforms.RandomHorizontalFlip()] + tail)
        ds = datasets.ImageFolder(a.data, transform=tf)
    else:
        tail = [v2.ToDtype(torch.float32, scale=True)] + norm if a.dtype == "f32" else []
        tf = transforms.Compose([v2.RandomResizedCrop(224, antialias=True),
                                 v2.RandomHorizontalFlip()] + tail)
        ds = TvioFolder(a.data, tf)
    dl = torch.utils.data.DataLoader(
        ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
        persistent_workers=a.workers > 0, worker_init_fn=one_thread if a.workers else None)
    want = torch.float32 if a.dtype == "f32" else torch.uint8

    def check(b):
        x = b[0]
        if x.dtype != want or tuple(x.shape[1:]) != (3, 224, 224) or not x.is_contiguous():
            sys.exit(f"peer_torch.py: unexpected batch {x.dtype} {tuple(x.shape)}")
        return x.shape[0], tuple(x.shape), x.dtype

    res = peer_common.measure(lambda: dl, a, check)
    peer_common.emit(a, "torch", f"{a.path} nw={a.workers}", res, {
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "pillow": PIL.__version__})


if __name__ == "__main__":
    main()
