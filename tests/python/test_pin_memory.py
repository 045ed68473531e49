# SPDX-License-Identifier: Apache-2.0
# pin_memory=True (as torch's DataLoader): the flag is accepted and changes no batch; with no
# CUDA device it warns once and runs unpinned; each pool buffer is pinned once when made and
# unpinned once when freed (close, garbage collection, or the last batch held past them),
# through the two hooks stoker.Loader hands the module (here recording ones: pinning itself
# needs a device); on a device, batches are pinned and a non_blocking copy is exact even when
# the batch is dropped right after its .to().
import gc
import warnings

import numpy
import pytest
import torch

import stoker
from skip_policy import skip_case

OPTS = dict(batch_size=8, size=64, seed=3, prefetch=2)


def epoch(loader):
    """The epoch's batches as copies, and its checksum."""
    out = [(x.clone(), y.clone()) for x, y in loader]
    return out, loader.stats()["epoch_checksums"][-1]


@pytest.mark.parametrize("reader", ["serial", "threads:2", "processes:2"])
def test_the_flag_changes_no_batch(photos, reader):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the no-device warning: its own test below
        with stoker.Loader(photos, reader=reader, pin_memory=True, **OPTS) as pinned:
            got, got_sum = epoch(pinned)
    with stoker.Loader(photos, reader=reader, pin_memory=False, **OPTS) as plain:
        want, want_sum = epoch(plain)
    assert got_sum == want_sum
    assert len(got) == len(want) == 8
    for (gx, gy), (wx, wy) in zip(got, want):
        assert torch.equal(gx, wx) and torch.equal(gy, wy)


def test_bad_values():
    with pytest.raises(TypeError, match="pin_memory must be a bool"):
        stoker.Loader("/nonexistent", pin_memory=1)
    with pytest.raises(ValueError, match="pin_memory=True needs tensors='torch'"):
        stoker.Loader("/nonexistent", pin_memory=True, tensors="numpy")


def test_no_device_warns_once_and_works(photos):
    if torch.cuda.is_available():
        skip_case("a CUDA device is here: batches are pinned, nothing to warn",
                  kind="not-applicable")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning given, not Python's once per line
        loader = stoker.Loader(photos, reader="threads:2", pin_memory=True, **OPTS)
        for _ in range(2):
            assert sum(1 for _ in loader) == 8
        loader.close()
    said = [w for w in caught if "pin_memory" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert said[0].category is UserWarning
    assert "no CUDA device" in str(said[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stoker.Loader(photos, reader="serial", **OPTS).close()
    assert not caught, [str(w.message) for w in caught]


class Recorder:
    """The (pin, unpin) hooks, recording: address -> bytes pinned now, and every call."""

    def __init__(self, fail_at=None):
        self.pinned, self.calls, self.fail_at = {}, [], fail_at

    def pin(self, address, nbytes):
        self.calls.append(("pin", address))
        if self.fail_at is not None and len(self.pinned) == self.fail_at:
            raise RuntimeError("cudaHostRegister failed: CUDA error 2")
        assert address not in self.pinned and address % 4096 == 0 and nbytes % 4096 == 0
        self.pinned[address] = nbytes

    def unpin(self, address):
        self.calls.append(("unpin", address))
        assert address in self.pinned, f"unpinned {address:#x}, which is not pinned"
        del self.pinned[address]

    def inside(self, address, nbytes):
        return any(a <= address and address + nbytes <= a + n for a, n in self.pinned.items())


def core(photos, reader, hooks):
    kwargs = dict(OPTS, reader=reader, keep=2)
    return stoker._stoker.LoaderCore(photos, kwargs, (hooks.pin, hooks.unpin))


@pytest.mark.parametrize("reader", ["serial", "threads:2", "processes:2"])
def test_each_buffer_pinned_once_and_unpinned_when_freed(photos, reader):
    rec = Recorder()
    c = core(photos, reader, rec)
    pinned_at_start = dict(rec.pinned)
    assert sum(pinned_at_start.values()) >= c.pool_bytes() > 0
    c.start(0, 0)
    kept = []
    for _ in range(8):  # every batch lies in pinned memory; no pinning per batch
        lease = c.next()
        images = numpy.asarray(lease)
        assert rec.inside(images.__array_interface__["data"][0], images.nbytes)
        kept = [images]  # the loop's variable: the previous batch goes back to the pool
    assert rec.pinned == pinned_at_start
    del lease
    # The loader dropped while a batch is held: its memory stays pinned until the batch goes.
    del c
    gc.collect()
    assert rec.pinned == pinned_at_start
    del kept, images
    gc.collect()
    assert rec.pinned == {}, "pinned buffers left after the loader and its batches are gone"
    assert [k for k, _ in rec.calls].count("pin") == [k for k, _ in rec.calls].count("unpin")


def test_a_failed_pin_unpins_the_rest_and_names_the_cause(photos):
    rec = Recorder(fail_at=2)
    with pytest.raises(stoker.Error, match="pin_memory: cannot pin a batch buffer.*CUDA error 2"):
        core(photos, "threads:2", rec)
    assert rec.pinned == {}


def test_on_a_device_batches_are_pinned_and_copy_exactly(photos):
    if not torch.cuda.is_available():
        skip_case("no CUDA device: pinned memory needs one", kind="no-cuda-device")
    with stoker.Loader(photos, reader="threads:2", pin_memory=False, **OPTS) as plain:
        want = [x.clone() for x, _ in plain]
    # Each batch copied non_blocking and dropped at once (the usual loop): its buffer must not
    # be refilled while the copy still reads it.
    got = []
    with stoker.Loader(photos, reader="threads:2", pin_memory=True, **OPTS) as loader:
        for images, _ in loader:
            assert images.is_pinned()
            got.append(images.to("cuda", non_blocking=True))
            del images
    torch.cuda.synchronize()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert torch.equal(g.cpu(), w)
