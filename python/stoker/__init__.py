# SPDX-License-Identifier: Apache-2.0
"""Stoker's data loader for Python training loops.

``stoker.Loader`` iterates over ``(images, labels)`` batches made by the C++ loader (the
same one as the ``stoker`` CLI: same options, same batches, same checksums). Images reach
PyTorch through DLPack and NumPy through the buffer protocol, without a copy. This file is
the iteration protocol, ``state_dict`` and argument names; it decodes and shuffles nothing.
"""

import gc
import json
import os

from . import _stoker

__version__ = _stoker.__version__
Error = _stoker.Error

# pip install puts stoker-worker (the processes:N worker) beside this file; the build tree
# leaves it where it was built, which the library knows.
_worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stoker-worker")
if "STOKER_WORKER" not in os.environ and os.access(_worker, os.X_OK):
    os.environ["STOKER_WORKER"] = _worker

# Python name -> the CLI option it mirrors (docs/CLI.md), for the docs and error messages.
CLI_NAMES = {
    "batch_size": "--batch", "reader": "--reader", "prefetch": "--prefetch",
    "transform": "--transform", "size": "--size", "mean": "--mean", "std": "--std",
    "flip": "--flip", "dtype": "--dtype",
    "layout": "--layout", "seed": "--seed", "shuffle": "--no-shuffle (inverted)",
    "drop_last": "--drop-last", "on_error": "--on-error", "max_pixels": "--max-pixels",
    "dct_scaling": "--no-dct-scaling (inverted)",
    "partial_decode": "--no-partial-decode (inverted)", "decode": "--no-decode (inverted)",
    "direct": "--direct", "shard_order": "--shard-order", "shuffle_buffer": "--shuffle-buffer",
    "source_kind": "--source", "null_file": "--null-file", "jitter": "--jitter",
    "grayscale": "--grayscale", "resize_filter": "--resize-filter",
    "size_schedule": "--size-schedule",
    "keep": None, "warn": None, "tensors": None,
}


class Loader:
    """Batches of an image dataset: ``for images, labels in stoker.Loader(path, ...)``.

    ``source`` is what the CLI takes as DATA: an ImageFolder directory, a list file, a
    ``stoker pack`` folder or an ``nfs://`` URL. Every other argument is keyword-only and
    named after its CLI option (``stoker.CLI_NAMES``); defaults are the CLI's, except
    ``reader`` (``threads:<cpus>``). ``size`` is an int or a ``(height, width)`` pair (the
    CLI's ``N`` or ``HxW``); ``mean`` and ``std`` are three floats each. ``size_schedule``
    (``"MIN:MAX@A-B"``, or ``"MIN:MAX@steps:A-B"``; instead of ``size``) changes the size with
    the epoch set by ``set_epoch`` (or with the batch), as ``--size-schedule`` does: each batch
    has its own shape. Python-only ones:

    - ``tensors``: ``"torch"`` (default) yields ``torch.Tensor`` images (DLPack) and int64
      labels; ``"numpy"`` yields ``numpy.ndarray`` (buffer protocol).
    - ``keep`` (default 1): batches Python may still hold when it asks for the next one
      without slowing the reader. The pool is ``prefetch + 1 + keep`` batches (serial:
      ``1 + keep``) and never grows: while every one of them is referenced from Python,
      asking for another raises ``RuntimeError`` (after one ``gc.collect()``).
    - ``warn`` (default True): one line on stderr per bad file under ``on_error="skip"``.

    A batch's memory goes back to the pool when its last reference (array, tensor, or a
    view of either) is dropped; a batch you keep is never overwritten.
    """

    def __init__(self, source, *, tensors="torch", **kwargs):
        if not isinstance(source, (str, os.PathLike)):
            raise TypeError(f"source must be a path or URL (str), not {type(source).__name__}")
        if tensors not in ("torch", "numpy"):
            raise ValueError(f"tensors must be 'torch' or 'numpy', got {tensors!r}")
        self._torch = None
        if tensors == "torch":
            import torch  # only when asked for: NumPy users need not have it
            self._torch = torch
        self._numpy = __import__("numpy")
        options = dict(_stoker.default_kwargs())
        options.update(kwargs)
        self.options = options
        self._core = _stoker.LoaderCore(os.fspath(source), kwargs)
        self._epoch = 0
        self._start = 0  # position to resume from (load_state_dict), used by the next iter()
        self._generation = 0  # which iter() is current: an older iterator must not go on
        self._active = False  # an epoch is started and not finished

    # --- the DataLoader surface -------------------------------------------------------
    def __len__(self):
        """Batches per epoch (as ``len(DataLoader)``)."""
        return self._core.batches_per_epoch()

    def set_epoch(self, epoch):
        """The epoch the next ``iter()`` runs (shuffle and crops are a function of it)."""
        if not isinstance(epoch, int) or isinstance(epoch, bool):
            raise TypeError(f"epoch must be an int, not {type(epoch).__name__}")
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self._epoch = epoch
        self._start = 0
        self._active = False

    def __iter__(self):
        """Starts the current epoch (from the loaded position, if any); a finished epoch
        moves the loader to the next one, so ``for e in range(E): for b in loader`` sees E
        different epochs without set_epoch."""
        self._generation += 1
        self._core.start(self._epoch, self._start)
        self._start = 0
        self._active = True
        return _EpochIterator(self, self._generation)

    def _next(self, generation):
        if generation != self._generation:
            raise RuntimeError("this iterator was superseded by a later iter() of the loader")
        if not self._active:
            raise StopIteration
        if self._core.held() >= self._core.pool_batches():
            gc.collect()  # a batch only a reference cycle holds
            if self._core.held() >= self._core.pool_batches():
                raise RuntimeError(
                    f"all {self._core.pool_batches()} batch buffers are held by Python "
                    f"references (prefetch={self.options['prefetch']}, "
                    f"keep={self.options['keep']}): drop a batch (del it) before asking for "
                    "the next one, or raise keep")
        lease = self._core.next()
        if lease is None:
            self._active = False
            self._epoch += 1
            raise StopIteration
        if self._torch is not None:
            images = self._torch.from_dlpack(lease)
            labels = self._torch.from_numpy(lease.labels)
        else:
            images = self._numpy.asarray(lease)
            labels = lease.labels
        return images, labels

    # --- exact resume (torchdata's StatefulDataLoader) ---------------------------------
    def state_dict(self):
        """Where the loader is: resuming from it yields exactly the batches not yet yielded."""
        if self._active:
            epoch, position = self._core.position()
        else:
            epoch, position = self._epoch, self._start
        return {"epoch": int(epoch), "position": int(position),
                "seed": int(self.options["seed"]),
                "batch_size": int(self.options["batch_size"]),
                "dataset_size": int(self._core.dataset_size())}

    def load_state_dict(self, state):
        """The next ``iter()`` continues from ``state`` (same dataset, seed and batch size)."""
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, not {type(state).__name__}")
        for key in ("epoch", "position", "seed"):
            if key not in state:
                raise ValueError(f"state: no '{key}' (expected a Loader.state_dict())")
        mine = self.state_dict()
        for key in ("seed", "batch_size", "dataset_size"):
            if key in state and state[key] != mine[key]:
                raise ValueError(f"state: {key} {state[key]} differs from this loader's "
                                 f"{mine[key]}: it would not resume the same sequence")
        position = int(state["position"])
        if position < 0 or position > mine["dataset_size"] or position % mine["batch_size"]:
            raise ValueError(f"state: position {position} is not a batch boundary of this "
                             "loader's epoch")
        self._epoch = int(state["epoch"])
        self._start = position
        self._active = False

    # --- measurement -------------------------------------------------------------------
    def stats(self):
        """What ``stoker bench`` reports for this loader so far (docs/FORMATS.md): per-stage
        time per image and percentiles (``stage_ms``), the time the caller waited in
        ``next()`` (``batch_wait_ms`` percentiles), images/s, MB/s, bad files and the
        checksum of every epoch iterated from its start (``epoch_checksums``). ``seconds``
        counts from construction; ``cpu_seconds`` is the whole process's (training
        included), not the loader's alone."""
        return json.loads(self._core.stats_json())

    @property
    def classes(self):
        """Class names; label i is classes[i] (torchvision's ImageFolder order)."""
        return list(self._core.classes())

    @property
    def pool_bytes(self):
        """Bytes of batch memory the loader holds (fixed at construction)."""
        return self._core.pool_bytes()

    def close(self):
        """Stops the reader (worker processes end) unless batches are still referenced, in
        which case that happens when the last one is dropped."""
        self._active = False
        self._core = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _EpochIterator:
    """One pass of a Loader (what ``iter(loader)`` returns)."""

    def __init__(self, loader, generation):
        self._loader = loader
        self._generation = generation

    def __iter__(self):
        return self

    def __next__(self):
        return self._loader._next(self._generation)

    def __len__(self):
        return len(self._loader)
