# SPDX-License-Identifier: Apache-2.0
# Zero-copy hand-off and batch lifetime: a batch Python keeps is never overwritten, memory
# goes back to the pool when the last reference goes, the pool never grows, and holding
# every buffer is a clear error rather than a wait or more memory.
import gc

import numpy as np
import pytest
import torch

import stoker


def test_kept_batches_are_not_overwritten(photos):
    loader = stoker.Loader(photos, batch_size=4, size=32, seed=2, reader="threads:2", keep=3)
    kept, copies = [], []
    for i, (x, y) in enumerate(loader):
        if i % 4 == 0 and len(kept) < 3:
            kept.append(x)
            copies.append(x.clone())
    for _ in loader:  # a whole second epoch through the pool
        pass
    for k, c in zip(kept, copies):
        assert torch.equal(k, c)


def test_no_copy_and_a_bounded_pool(photos):
    # Every batch lies in one of the pool's buffers: over 30 batches at most pool-size
    # distinct addresses, and the same ones for torch (DLPack) and numpy (buffer protocol).
    addresses = {}
    for kind in ("torch", "numpy"):
        loader = stoker.Loader(photos, batch_size=2, size=32, reader="threads:2", prefetch=2,
                               keep=1, tensors=kind)
        seen = set()
        for x, _ in loader:
            seen.add(x.data_ptr() if kind == "torch" else x.__array_interface__["data"][0])
        assert 1 <= len(seen) <= 4  # prefetch + 1 + keep
        addresses[kind] = seen
        assert loader.pool_bytes == 4 * 2 * 3 * 32 * 32 * 4


def test_views_keep_the_batch(photos):
    loader = stoker.Loader(photos, batch_size=4, size=32, reader="serial", keep=1)
    it = iter(loader)
    x, _ = next(it)
    view = x[1:3, 0]  # a view is a reference too
    copy = view.clone()
    del x
    for _ in range(3):
        nx, _ = next(it)  # pool of 1 + 1 kept: with the view alive only one buffer is free
        del nx
    assert torch.equal(view, copy)


@pytest.mark.parametrize("reader", ["serial", "threads:2", "processes:2"])
def test_holding_every_buffer_is_an_error(photos, reader):
    loader = stoker.Loader(photos, batch_size=2, size=32, reader=reader, prefetch=1, keep=1,
                           tensors="numpy")
    it = iter(loader)
    pool = 2 if reader == "serial" else 3
    held = [next(it) for _ in range(pool)]
    with pytest.raises(RuntimeError, match="batch buffers are held"):
        next(it)
    before = held[0][0].copy()
    del held[-1]
    x, _ = next(it)  # one buffer free again: it goes on
    assert np.array_equal(held[0][0], before)
    assert x.shape == (2, 3, 32, 32)


def test_a_cycle_holding_a_batch_is_collected(photos):
    loader = stoker.Loader(photos, batch_size=2, size=32, reader="serial", keep=0)
    it = iter(loader)
    x, _ = next(it)
    cycle = [x]
    cycle.append(cycle)
    del x, cycle
    gc.disable()
    try:
        next(it)  # the only buffer is in an unreachable cycle: collected, not an error
    finally:
        gc.enable()


def test_batch_outlives_the_loader(photos):
    loader = stoker.Loader(photos, batch_size=4, size=32, reader="processes:2")
    x, y = next(iter(loader))
    copy = x.clone()
    del loader
    gc.collect()
    assert torch.equal(x, copy)  # the pool (shared memory) lives while the batch does
    assert x.sum().item() == copy.sum().item()
