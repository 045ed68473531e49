#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Time torchvision's stock ImageFolder pipeline, as a baseline for Stoker.

The pipeline is the usual ImageNet training recipe (RandomResizedCrop(224),
flip, ToTensor, Normalize) behind DataLoader(batch_size=64, shuffle=True).
The clock runs from the first iter() to the last batch, so worker start-up is
included, as a user experiences it.

Shebang is /usr/bin/python3 on purpose: Debian's python3-torch and
python3-torchvision live there, and a pyenv/venv python3 earlier on PATH
would not see them.
"""
import argparse
import json
import os
import sys
import time

try:
    import PIL
    import torch
    import torchvision
    from torchvision import datasets, transforms
except ImportError as e:
    sys.exit(f"torchvision_loader.py: {e} (interpreter {sys.executable}); "
             "install with: apt-get install -y python3-torchvision python3-torch "
             "and run with /usr/bin/python3")


class RecordingSampler(torch.utils.data.RandomSampler):
    """Exactly what shuffle=True uses, but remembers the order it handed out,
    so MB/s can use the sizes of the files actually loaded (this matters only
    with --max-batches, where an epoch is cut short)."""

    def __init__(self, data_source):
        super().__init__(data_source)
        self.order = []

    def __iter__(self):
        self.order = []
        for i in super().__iter__():
            self.order.append(i)
            yield i


def worker_init(threads):
    # DataLoader workers already default to 1 intra-op thread; set it anyway
    # so --threads means the same thing in every process.
    def init(_worker_id):
        torch.set_num_threads(threads)
    return init


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="ImageFolder root (class/xxx.jpg)")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-batches", type=int, default=None, help="cap per epoch")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads per process (default 1: fair on small machines)")
    ap.add_argument("--json", help="write the result here")
    a = ap.parse_args()

    if not os.path.isdir(a.data):
        sys.exit(f"torchvision_loader.py: no such dataset directory: {a.data}")
    torch.set_num_threads(a.threads)

    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(a.data, transform=tf)
    # Sizes are read before the clock starts: stat() is not the loader's work.
    sizes = [os.path.getsize(p) for p, _ in ds.samples]
    sampler = RecordingSampler(ds)
    dl = torch.utils.data.DataLoader(
        ds, batch_size=a.batch_size, sampler=sampler, num_workers=a.workers,
        drop_last=False, worker_init_fn=worker_init(a.threads) if a.workers else None)

    images = nbytes = 0
    first_batch_s = None
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        seen = 0
        for b, (x, _y) in enumerate(dl):
            if first_batch_s is None:
                first_batch_s = time.perf_counter() - t0
            seen += x.shape[0]
            if a.max_batches is not None and b + 1 >= a.max_batches:
                break
        # Batches arrive in sampler order, so the first `seen` indices are
        # exactly the images loaded this epoch.
        nbytes += sum(sizes[i] for i in sampler.order[:seen])
        images += seen
    seconds = time.perf_counter() - t0

    res = {
        "loader": "torchvision",
        "dataset": os.path.abspath(a.data),
        "workers": a.workers,
        "threads": a.threads,
        "batch_size": a.batch_size,
        "epochs": a.epochs,
        "images": images,
        "bytes": nbytes,
        "seconds": seconds,
        "first_batch_s": first_batch_s,
        "images_per_s": images / seconds if seconds > 0 else 0.0,
        "mb_per_s": nbytes / 1e6 / seconds if seconds > 0 else 0.0,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
    }
    print(f"torchvision nw={a.workers} {a.data}: {images} images in {seconds:.2f} s = "
          f"{res['images_per_s']:.1f} img/s, {res['mb_per_s']:.2f} MB/s "
          f"(first batch {first_batch_s or 0:.2f} s)")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
