# SPDX-License-Identifier: Apache-2.0
"""Labels and dataset indices of stoker.Loader checked exactly, whatever NumPy it runs under.

The data is `stoker gen --pattern index`: each image one flat colour that encodes its position
in ImageFolder order, so every batch says which samples it holds, and their labels follow.
pytest runs it under Debian's NumPy 1 (test_labels.py, NumPy and torch tensors) and
numpy2_test.sh under NumPy 2 (issue 47: a module built with pybind11 2.10 gave every label of
a batch the last sample's under NumPy 2). As a script: labels_exact.py STOKER_CLI [--numpy-major N]
"""
import argparse
import subprocess
import sys
import tempfile
import warnings

CLASSES, PER_CLASS = 4, 10
SIZE = 16


def make_dataset(stoker_cli, root):
    subprocess.run([stoker_cli, "gen", root, "--sizes", "48", "--classes", str(CLASSES),
                    "--per-class", str(PER_CLASS), "--pattern", "index"], check=True,
                   stdout=subprocess.DEVNULL)
    return root


def sample_index(pixel):
    """The inverse of gen's index colour: 4 bits a channel, channel c holds bits 4c..4c+3."""
    return sum(min(15, max(0, round((int(v) - 8) / 16))) << (4 * c) for c, v in enumerate(pixel))


def as_numpy(x):
    return x.numpy() if hasattr(x, "numpy") else x


def check_batch(numpy, images, labels, where):
    images, labels = as_numpy(images), as_numpy(labels)
    assert labels.dtype == numpy.int64, f"{where}: labels are {labels.dtype}, not int64"
    assert labels.strides == (8,), f"{where}: labels' strides are {labels.strides}, not (8,)"
    held = [sample_index(images[k, SIZE // 2, SIZE // 2]) for k in range(images.shape[0])]
    want = [i // PER_CLASS for i in held]
    assert labels.tolist() == want, f"{where}: labels {labels.tolist()}, samples {held} " \
        f"(expected labels {want})"
    return held


def loader_for(stoker, dataset, tensors, **options):
    return stoker.Loader(dataset, tensors=tensors, reader="serial", size=SIZE, dtype="u8",
                         layout="nhwc", transform="center", **options)


def check_epochs(stoker, numpy, dataset, tensors):
    """Every batch's labels, in order and shuffled, with a short last batch."""
    n = CLASSES * PER_CLASS
    for shuffle in (False, True):
        for batch in (8, 7):
            loader = loader_for(stoker, dataset, tensors, batch_size=batch, shuffle=shuffle)
            for epoch in range(2):
                seen = []
                for b, (images, labels) in enumerate(loader):
                    where = f"{tensors}, shuffle={shuffle}, batch {batch}, epoch {epoch} #{b}"
                    seen += check_batch(numpy, images, labels, where)
                assert sorted(seen) == list(range(n)), f"{tensors}: epoch {epoch} saw {seen}"
                if not shuffle:
                    assert seen == list(range(n)), f"{tensors}: unshuffled order {seen}"
            loader.close()


def check_kept_batches(stoker, numpy, dataset, tensors):
    """A loop that keeps every batch: past the pool, batches (labels too) are copied out."""
    loader = loader_for(stoker, dataset, tensors, batch_size=4, shuffle=True, prefetch=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the copy-out warning, expected
        kept = list(loader)
    assert len(kept) > loader._core.pool_batches(), "the pool never filled: no copy tested"
    seen = []
    for b, (images, labels) in enumerate(kept):
        seen += check_batch(numpy, images, labels, f"{tensors}, kept batch #{b}")
    assert sorted(seen) == list(range(CLASSES * PER_CLASS))
    loader.close()


def check_indices(stoker, numpy, dataset):
    """The module's dataset indices (the lease's, which the loader does not yield)."""
    loader = loader_for(stoker, dataset, "numpy", batch_size=8, shuffle=True)
    iter(loader)
    for b in range(len(loader)):
        lease = loader._core.next()
        indices = numpy.asarray(lease.indices)
        assert indices.dtype == numpy.int64 and indices.strides == (8,), \
            f"indices: dtype {indices.dtype}, strides {indices.strides}"
        held = [sample_index(p) for p in numpy.asarray(lease)[:, SIZE // 2, SIZE // 2]]
        assert indices.tolist() == held, f"batch #{b}: indices {indices.tolist()}, samples {held}"
        del lease
    loader.close()


def check_all(stoker_cli, tensor_kinds):
    import numpy
    import stoker
    with tempfile.TemporaryDirectory() as tmp:
        dataset = make_dataset(stoker_cli, tmp + "/index")
        for tensors in tensor_kinds:
            check_epochs(stoker, numpy, dataset, tensors)
            check_kept_batches(stoker, numpy, dataset, tensors)
        check_indices(stoker, numpy, dataset)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stoker_cli")
    ap.add_argument("--numpy-major", type=int, help="fail unless this NumPy major imports")
    args = ap.parse_args()
    import numpy
    print(f"python {sys.executable}, numpy {numpy.__version__} from {numpy.__file__}")
    major = int(numpy.__version__.split(".")[0])
    if args.numpy_major is not None and major != args.numpy_major:
        print(f"FAIL: numpy {numpy.__version__} imports, not NumPy {args.numpy_major}")
        return 1
    kinds = ["numpy"]
    try:  # a venv with PyPI's torch too (the benchmarks'): its DLPack and from_numpy path
        import torch  # noqa: F401
        kinds.append("torch")
    except ImportError:
        pass
    check_all(args.stoker_cli, kinds)
    print(f"tensors: {', '.join(kinds)}")
    print("labels and indices exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
