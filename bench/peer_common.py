# SPDX-License-Identifier: Apache-2.0
"""What every peer runner of bench/peers.sh shares: its options, the clock and the JSON line.

The clock: `warmup` batches are taken first (worker start-up, JIT compilation, first reads),
then the next `batches` batches (or fewer, once `seconds` have passed and at least two were
timed) are timed from the arrival of the last warm-up batch to the arrival of the last timed
one; images/s = timed batches x batch / that time. The time from the
loader's creation to the last batch is kept too (`seconds_total`). Epochs wrap: a loader that
runs out starts its next epoch, as in training. Not a loader: no decoding here.
"""
import argparse
import json
import os
import platform
import sys
import time

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def parser(doc):
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--data", required=True, help="ImageFolder root (class/xxx.jpg)")
    ap.add_argument("--dataset", required=True, help="label of the dataset in the results")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="workers / threads of the peer")
    ap.add_argument("--warmup", type=int, default=3, help="batches before the clock starts")
    ap.add_argument("--batches", type=int, default=20, help="timed batches, at most")
    ap.add_argument("--seconds", type=float, default=1e9,
                    help="stop timing after this long (at least 2 timed batches)")
    ap.add_argument("--repeat", type=int, default=1, help="repeat number, recorded only")
    ap.add_argument("--json", required=True, help="append one JSON line here")
    return ap


def check_data(a, prog):
    if not os.path.isdir(a.data):
        sys.exit(f"{prog}: no such dataset directory: {a.data}")
    for k in ("batch", "threads", "batches"):
        if getattr(a, k) < 1:
            sys.exit(f"{prog}: --{k} must be at least 1, got {getattr(a, k)}")
    if a.warmup < 1:
        sys.exit(f"{prog}: --warmup must be at least 1 (the clock starts at a batch's arrival)")


def measure(make_epoch, a, check_batch):
    """make_epoch(): an iterable of batches (one epoch). check_batch(batch) -> (n, shape, dtype),
    called on every batch so that a peer handing out something else than asked fails loudly."""
    t_create = time.perf_counter()
    seen = 0
    t0 = t1 = None
    shape = dtype = None
    need = a.warmup + a.batches

    def finished():
        return seen == need or (seen >= a.warmup + 2 and t1 - t0 >= a.seconds)

    while not finished():
        got = 0
        for b in make_epoch():
            n, shape, dtype = check_batch(b)
            if n != a.batch:
                continue  # a short last batch: neither counted nor timed
            t1 = time.perf_counter()
            seen += 1
            got += 1
            if seen == a.warmup:
                t0 = t1
            if finished():
                break
        if got == 0:
            sys.exit(f"dataset {a.data} gives no full batch of {a.batch}")
    timed = seen - a.warmup
    return {
        "images": timed * a.batch,
        "seconds": t1 - t0,
        "images_per_s": timed * a.batch / (t1 - t0),
        "seconds_total": t1 - t_create,
        "images_per_s_total": seen * a.batch / (t1 - t_create),
        "shape": list(shape),
        "out_dtype": str(dtype),
    }


def emit(a, tool, variant, result, versions):
    row = {
        "tool": tool,
        "variant": variant,
        "dataset": a.dataset,
        "data": os.path.abspath(a.data),
        "threads": a.threads,
        "batch": a.batch,
        "warmup": a.warmup,
        "batches": result["images"] // a.batch,
        "dtype": a.dtype,
        "repeat": a.repeat,
        "python": platform.python_version(),
        "versions": versions,
        **result,
    }
    with open(a.json, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"{tool} {variant} {a.dataset} {a.dtype} x{a.threads}: "
          f"{row['images_per_s']:.1f} img/s (with start-up {row['images_per_s_total']:.1f})",
          flush=True)
