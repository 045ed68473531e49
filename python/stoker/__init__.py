# SPDX-License-Identifier: Apache-2.0
"""Stoker's data loader for Python training loops.

``stoker.Loader`` iterates over ``(images, labels)`` batches made by the C++ loader (the
same one as the ``stoker`` CLI: same options, same batches, same checksums). Images reach
PyTorch through DLPack and NumPy through the buffer protocol, without a copy. This file is
the iteration protocol, ``state_dict`` and argument names; it decodes and shuffles nothing.
"""

import gc
import json
import logging
import os
import warnings
import weakref

from . import _stoker

__version__ = _stoker.__version__
Error = _stoker.Error

# Labels and indices cross into Python through the buffer protocol (python/src/batch_export.h):
# pybind11's own NumPy arrays, under pybind11 < 2.12 and NumPy 2, came out with a stride of 0
# and every label the batch's last (issue 47). Checked once here, so that no combination of
# pybind11, NumPy and torch versions trains on wrong labels without a word.
_PROBE = [0, 1, -1, 7, 2**40 + 3, -(2**62)]


def _check_int_export():
    import numpy
    got = numpy.asarray(_stoker.int64s_probe(_PROBE))
    if got.dtype != numpy.int64 or got.strides != (8,) or got.tolist() != _PROBE:
        raise ImportError(
            f"stoker: NumPy {numpy.__version__} reads the module's int64 labels as "
            f"{got.tolist()} (dtype {got.dtype}, strides {got.strides}), not {_PROBE}; the "
            f"module was built with pybind11 {_stoker.pybind11_version}: rebuild it against "
            "this NumPy (pip install .), or use the NumPy it was built for")


_check_int_export()

# pip install puts stoker-worker (the processes:N worker) beside this file; the build tree
# leaves it where it was built, which the library knows.
_worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stoker-worker")
if "STOKER_WORKER" not in os.environ and os.access(_worker, os.X_OK):
    os.environ["STOKER_WORKER"] = _worker

# Python name -> the CLI option it mirrors (docs/CLI.md), for the docs and error messages:
# the module's one table of loader arguments, and this class's own two.
CLI_NAMES = {**_stoker.cli_names(), "tensors": None, "overflow_batches": None,
             "pin_memory": None}

# Batches copied out of a full pool that may be alive at once (Loader's overflow_batches).
DEFAULT_OVERFLOW_BATCHES = 64

# The C++ library's warnings (a skipped file, a reader that fell back, a late batch) go to
# this logger, not straight to stderr: without a handler configured Python prints them on
# stderr as the CLI does; logging.getLogger("stoker") redirects or silences them.
log = logging.getLogger("stoker")


def _emit_log():
    for _level, text in _stoker.drain_log():
        log.warning("%s", text)


def _copy_freed(counter):
    counter[0] -= 1


def _cuda_pinning(torch):
    """(pin, unpin) through torch's CUDA runtime: the module is built without CUDA."""
    cudart = torch.cuda.cudart()

    def pin(address, nbytes):
        # cudaHostRegisterPortable (1): pinned for every device and context, as the CLI's
        # GPU runs pin (train/gpu/gpu_memory.cc).
        err = int(cudart.cudaHostRegister(address, nbytes, 1))
        if err != 0:
            raise RuntimeError(f"cudaHostRegister failed: CUDA error {err}")

    def unpin(address):
        # A non_blocking copy still reading the buffer ends before its pages are unlocked.
        torch.cuda.synchronize()
        cudart.cudaHostUnregister(address)

    return pin, unpin


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
      without slowing the reader. The pool is ``prefetch + 2 + keep`` batches (serial:
      ``2 + keep``): one spare, so that when all but one of them are referenced from Python
      (a list that keeps batches, views or losses without ``.item()``) each further batch is
      copied into new memory and its buffer goes back to the pool, as a DataLoader's batches
      would each have their own memory; one ``RuntimeWarning`` says why and how to avoid it.
    - ``overflow_batches`` (default 64): how many such copies may be alive at once; asking
      for one more raises ``RuntimeError`` naming the cause.
    - ``pin_memory`` (default False): batches in pinned (page-locked) host memory, as
      DataLoader's ``pin_memory``, so ``images.to("cuda", non_blocking=True)`` is
      asynchronous. The pool's buffers are pinned once, when the loader makes them, and
      unpinned when it frees them (``close()``, or when the loader and its last batch are
      gone). Without a CUDA device it warns once and runs unpinned, as DataLoader does.
      ``tensors="torch"`` only.
    - ``warn`` (default True): one line on stderr per bad file under ``on_error="skip"``.
    - ``rank``, ``world_size`` (default 0, 1): this process's shard for data parallelism,
      as DistributedSampler: global step k takes the epoch's samples [kB, (k+1)B) with
      B = world_size x batch_size, rank r the r-th batch_size of them (the rule of
      ``mpirun stoker train``; give ``drop_last=True`` for its equal step counts).

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
        pin_memory = kwargs.pop("pin_memory", False)
        if not isinstance(pin_memory, bool):
            raise TypeError(f"pin_memory must be a bool, not {type(pin_memory).__name__}")
        if pin_memory and tensors != "torch":
            raise ValueError("pin_memory=True needs tensors='torch' (pinned memory is for "
                             "torch's .to('cuda', non_blocking=True))")
        pinning = None
        if pin_memory:
            if self._torch.cuda.is_available():
                pinning = _cuda_pinning(self._torch)
            else:  # as torch's DataLoader: a warning, and ordinary memory
                warnings.warn(
                    "stoker.Loader: pin_memory=True but no CUDA device is found: batches are "
                    "in ordinary (pageable) memory", UserWarning, stacklevel=2)
        self._pinned = pinning is not None
        self._last = None  # the batch last yielded (pinned: held until its copy is done)
        self._in_flight = []  # (CUDA event, images) of yielded batches a copy may still read
        overflow = kwargs.pop("overflow_batches", DEFAULT_OVERFLOW_BATCHES)
        if not isinstance(overflow, int) or isinstance(overflow, bool):
            raise TypeError(f"overflow_batches must be an int, not {type(overflow).__name__}")
        if overflow < 0:
            raise ValueError(f"overflow_batches must be >= 0, got {overflow}")
        options = dict(_stoker.default_kwargs())
        options.update(kwargs)
        options["overflow_batches"] = overflow
        options["pin_memory"] = pin_memory
        self.options = options
        # One spare buffer beyond `keep`: the one a full pool copies its batches out of.
        keep = kwargs.get("keep", options["keep"])
        if isinstance(keep, int) and not isinstance(keep, bool) and 0 <= keep < 1024:
            kwargs["keep"] = keep + 1
        try:
            self._core = _stoker.LoaderCore(os.fspath(source), kwargs, pinning)
        finally:
            _emit_log()
        self._copies = [0]  # batches copied out of a full pool and still alive
        self._warned_full = False
        empty = list(self._core.empty_classes())
        if empty:  # as the CLI warns: a label no sample has is likely a mistake
            warnings.warn(
                f"stoker.Loader: {len(empty)} class directories of {os.fspath(source)} hold no "
                f"image: {', '.join(empty[:3])}{', ...' if len(empty) > 3 else ''} (their labels "
                "are kept, outputs no sample trains; torchvision's ImageFolder refuses such a "
                "folder with FileNotFoundError)", UserWarning, stacklevel=2)
        self._epoch = 0
        self._start = 0  # position to resume from (load_state_dict), used by the next iter()
        self._generation = 0  # which iter() is current: an older iterator must not go on
        self._active = False  # an epoch is started and not finished

    # --- the DataLoader surface -------------------------------------------------------
    def _live(self):
        if self._core is None:
            raise RuntimeError("this stoker.Loader is closed: make a new one to iterate again")
        return self._core

    def __len__(self):
        """Batches per epoch (as ``len(DataLoader)``)."""
        return self._live().batches_per_epoch()

    def set_epoch(self, epoch):
        """The epoch the next ``iter()`` runs (shuffle and crops are a function of it). After
        ``load_state_dict(state)``, ``set_epoch(state["epoch"])`` keeps the loaded position
        (the loop ``for e in range(start, E): loader.set_epoch(e)`` resumes exactly); another
        epoch drops it, with a warning: that epoch starts from its first batch."""
        if not isinstance(epoch, int) or isinstance(epoch, bool):
            raise TypeError(f"epoch must be an int, not {type(epoch).__name__}")
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        if self._start and epoch != self._epoch:
            warnings.warn(
                f"stoker.Loader.set_epoch({epoch}): the position loaded by load_state_dict "
                f"(epoch {self._epoch}, sample {self._start}) is dropped; set_epoch("
                f"{self._epoch}) would resume there", UserWarning, stacklevel=2)
        if epoch != self._epoch:
            self._start = 0
        self._epoch = epoch
        self._active = False

    def __iter__(self):
        """Starts the current epoch (from the loaded position, if any); a finished epoch
        moves the loader to the next one, so ``for e in range(E): for b in loader`` sees E
        different epochs without set_epoch."""
        core = self._live()
        self._generation += 1
        core.start(self._epoch, self._start)
        self._start = 0
        self._active = True
        return _EpochIterator(self, self._generation)

    # The pool is full but for one buffer (the spare): the batch made in it is copied out, so
    # the reader always has a buffer (a loop that keeps batches gets more memory, not an
    # error).
    def _pool_full(self):
        return self._core.held() + 1 >= self._core.pool_batches()

    def _stuck(self):
        return self._core.held() >= self._core.pool_batches() or (
            self._pool_full() and self._copies[0] >= self.options["overflow_batches"])

    def _next(self, generation):
        # No local holds the core: a KeyboardInterrupt from next() keeps this frame in its
        # traceback, and the loader's workers must still end when the loader is dropped.
        if generation != self._generation:
            raise RuntimeError("this iterator was superseded by a later iter() of the loader")
        if not self._active:
            raise StopIteration
        self._live()
        if self._pinned:
            self._track_copies()
        # gc.collect() (batches only a reference cycle holds) before a warning or an error,
        # not on every copied batch: it costs milliseconds in a large program.
        if (self._pool_full() and not self._warned_full) or self._stuck():
            gc.collect()
        pool = self._core.pool_batches()
        if self._core.held() >= pool:  # not reached while the spare is kept free
            raise RuntimeError(
                f"all {pool} batch buffers are held by Python references "
                f"(prefetch={self.options['prefetch']}, keep={self.options['keep']}): drop a "
                "batch (del it) before asking for the next one, or raise keep")
        if self._stuck():
            raise RuntimeError(
                f"{pool - 1} of the {pool} batch buffers and {self._copies[0]} copied batches "
                f"(overflow_batches={self.options['overflow_batches']}) are held by Python "
                "references: a loop that keeps every batch (a list of batches, of views like "
                "x[0], or of losses without .item()) keeps them all; store .item() or "
                ".clone() of what you need")
        full = self._pool_full()
        try:
            lease = self._core.next()
        finally:
            _emit_log()
        if lease is None:
            self._active = False
            self._epoch += 1
            raise StopIteration
        if full:
            images, labels = self._copy_out(lease)
        elif self._torch is not None:
            images = self._torch.from_dlpack(lease)
            labels = self._torch.from_numpy(self._labels(lease))
        else:
            images = self._numpy.asarray(lease)
            labels = self._labels(lease)
        if self._pinned:
            self._last = images
        return images, labels

    def _labels(self, lease):
        """The batch's labels as a writable int64 array of its own (a few bytes a sample)."""
        return self._numpy.array(lease.labels, dtype=self._numpy.int64)

    # A non_blocking copy from pinned memory reads it after .to() returns, and torch does not
    # know the pool's buffers (it tracks only memory it pinned itself): a batch dropped right
    # after its .to() would go back to the pool, and be overwritten, while the copy reads it.
    # So the loader keeps each yielded batch until the work queued on the current stream by
    # the time the next one is asked for (its copy, in the usual loop) is done.
    def _track_copies(self):
        if self._last is not None:
            event = self._torch.cuda.Event()
            event.record()
            self._in_flight.append((event, self._last))
            self._last = None
        self._in_flight = [(e, x) for e, x in self._in_flight if not e.query()]
        if self._in_flight and self._pool_full():  # the held copies would fill the pool
            self._wait_copies()

    def _wait_copies(self):
        for event, _ in self._in_flight:
            event.synchronize()
        self._in_flight = []
        self._last = None

    def _copy_out(self, lease):
        """The batch as new memory; its pool buffer is free again once this returns."""
        if not self._warned_full:
            self._warned_full = True
            warnings.warn(
                f"stoker.Loader: {self._core.held() - 1} of the {self._core.pool_batches()} "
                "batch buffers "
                "are still held by Python references (a list that keeps batches, views like "
                "x[0], or losses without .item() keep their batch alive): batches are copied "
                "out of the pool from now on (more memory, a copy each; at most "
                f"overflow_batches={self.options['overflow_batches']} alive at once). Store "
                ".item() or .clone() of what you keep, or raise keep=",
                RuntimeWarning, stacklevel=4)
        if self._pinned:  # pinned as the pool is; the array keeps the tensor it views alive
            source = self._torch.from_dlpack(lease)
            images = self._torch.empty(source.shape, dtype=source.dtype, pin_memory=True).numpy()
            images[...] = source.numpy()
            del source
        else:
            images = self._numpy.array(lease, copy=True)
        labels = self._labels(lease)
        self._copies[0] += 1
        weakref.finalize(images, _copy_freed, self._copies)  # views keep `images` alive
        del lease
        if self._torch is not None:
            return self._torch.from_numpy(images), self._torch.from_numpy(labels)
        return images, labels

    # --- exact resume (torchdata's StatefulDataLoader) ---------------------------------
    def state_dict(self):
        """Where the loader is: resuming from it yields exactly the batches not yet yielded."""
        core = self._live()
        if self._active:
            epoch, position = core.position()
        else:
            epoch, position = self._epoch, self._start
        return {"epoch": int(epoch), "position": int(position),
                "seed": int(self.options["seed"]),
                "batch_size": int(self.options["batch_size"]),
                "dataset_size": int(core.dataset_size())}

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
        return json.loads(self._live().stats_json())

    @property
    def classes(self):
        """Class names; label i is classes[i] (torchvision's ImageFolder order)."""
        return list(self._live().classes())

    @property
    def pool_bytes(self):
        """Bytes of batch memory the loader holds (fixed at construction)."""
        return self._live().pool_bytes()

    def close(self):
        """Stops the reader (worker processes end) unless batches are still referenced, in
        which case that happens when the last one is dropped."""
        self._active = False
        if self._pinned:
            self._wait_copies()
        self._core = None
        _emit_log()

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
