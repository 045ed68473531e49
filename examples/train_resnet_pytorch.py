# SPDX-License-Identifier: Apache-2.0
"""Trains a torchvision ResNet with PyTorch, fed by torchvision's DataLoader or by
stoker.Loader: one line (marked THE SWITCH) differs. Prints images/s and the share of step
time spent waiting for data, over a fixed number of steps after a few warm-up ones.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_resnet_pytorch.py \
        --data DIR --loader stoker --arch resnet18 --size 96 --batch 32 --steps 40

Not a benchmark harness (`stoker bench` and `stoker study` are): one run, one line of
figures, so that the two loaders can be compared on the same machine, data and model.
"""
import argparse
import time

import torch
import torchvision
from torchvision import transforms as T


def torchvision_loader(args):
    tf = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    data = torchvision.datasets.ImageFolder(args.data, transform=tf)
    return torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True,
                                       num_workers=args.workers, drop_last=True,
                                       persistent_workers=args.workers > 0,
                                       pin_memory=args.device.startswith("cuda"))


def stoker_loader(args):
    import stoker
    # The same recipe: RandomResizedCrop, flip 0.5, ImageNet normalisation, float32 NCHW.
    return stoker.Loader(args.data, batch_size=args.batch, reader=f"{args.reader}:{args.workers}",
                         transform="rrc", size=args.size, dtype="f32", layout="nchw",
                         drop_last=True, seed=args.seed)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="ImageFolder directory")
    p.add_argument("--loader", choices=["torch", "stoker"], default="stoker")
    p.add_argument("--arch", default="resnet18",
                   help="a torchvision.models name, or none (no model: the loader's own rate)")
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", type=int, default=2, help="loader worker processes/threads")
    p.add_argument("--reader", default="threads", help="stoker reader kind: threads, processes")
    p.add_argument("--steps", type=int, default=40, help="measured steps")
    p.add_argument("--warmup", type=int, default=5, help="steps before measuring")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    # THE SWITCH: the only line that depends on which loader feeds the loop.
    loader = stoker_loader(args) if args.loader == "stoker" else torchvision_loader(args)

    model = None
    if args.arch != "none":
        model = getattr(torchvision.models, args.arch)(num_classes=1000).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        loss_fn = torch.nn.CrossEntropyLoss()
        model.train()
    loss = torch.zeros(())

    step, images, wait_s, t0 = 0, 0, 0.0, None
    epoch = 0
    while step < args.warmup + args.steps:
        it = iter(loader)
        while step < args.warmup + args.steps:
            w0 = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            if device.type == "cuda":
                torch.cuda.synchronize()  # the copy is part of getting the data
            w1 = time.perf_counter()
            if step == args.warmup:
                t0 = w0  # the clock starts at the first measured step's wait
            if step >= args.warmup:
                wait_s += w1 - w0
                images += x.shape[0]
            if model is not None:
                loss = loss_fn(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            step += 1
        epoch += 1
    wall = time.perf_counter() - t0
    print(f"loader={args.loader} arch={args.arch} size={args.size} batch={args.batch} "
          f"workers={args.workers} device={args.device} steps={args.steps}: "
          f"{images / wall:.1f} img/s, data wait {100 * wait_s / wall:.1f}% of {wall:.1f} s"
          + (f", last loss {loss.item():.3f}" if model is not None else ""))
    if args.loader == "stoker":
        s = loader.stats()
        print("stoker stages (ms/image): " + ", ".join(
            f"{k} {v:.2f}" for k, v in s["stage_ms_per_image"].items()) +
            f"; wait p50 {s['batch_wait_ms']['p50']:.1f} ms, p99 {s['batch_wait_ms']['p99']:.1f} ms")


if __name__ == "__main__":
    main()
