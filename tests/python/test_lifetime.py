# SPDX-License-Identifier: Apache-2.0
# Zero-copy hand-off and batch lifetime: a batch Python keeps is never overwritten, memory
# goes back to the pool when the last reference goes, the pool never grows, and a loop that
# keeps batches gets copies (one warning, up to overflow_batches) rather than an error.
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
        assert 1 <= len(seen) <= 5  # prefetch + 2 + keep (one spare)
        addresses[kind] = seen
        assert loader.pool_bytes == 5 * 2 * 3 * 32 * 32 * 4


def test_views_keep_the_batch(photos):
    loader = stoker.Loader(photos, batch_size=4, size=32, reader="serial", keep=1)
    it = iter(loader)
    x, _ = next(it)
    view = x[1:3, 0]  # a view is a reference too
    copy = view.clone()
    del x
    for _ in range(3):
        nx, _ = next(it)  # pool of 2 + 1 kept: with the view alive two buffers are free
        del nx
    assert torch.equal(view, copy)


@pytest.mark.parametrize("reader", ["serial", "threads:2", "processes:2"])
def test_a_loop_that_keeps_every_batch_goes_on(photos, reader):
    # All but one buffer held: the next batches are copies (one warning saying why and how
    # to avoid it), the same pixels as a loop that keeps nothing, and the kept ones intact.
    kw = dict(batch_size=2, size=32, reader=reader, prefetch=1, keep=1, tensors="numpy", seed=4)
    reference = [x.copy() for x, _ in stoker.Loader(photos, **kw)]
    loader = stoker.Loader(photos, **kw)
    pool = 3 if reader == "serial" else 4  # (serial: 2 + keep; else prefetch + 2 + keep)
    with pytest.warns(RuntimeWarning, match="copied out of the pool") as caught:
        held = [x for x, _ in loader]  # every batch of the epoch, 30 of them
    ours = [w for w in caught if "copied out of the pool" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]  # once per loader
    assert len(held) == len(reference) > pool + 3
    for k, (x, r) in enumerate(zip(held, reference)):
        assert np.array_equal(x, r), k
    addresses = {x.__array_interface__["data"][0] for x in held}
    assert len(addresses) == len(held)  # the copies are new memory, never a pool buffer again


def test_losses_without_item_and_kept_views(photos):
    # The loops of issue 26: a loss kept with its graph (and so its input batch), and a view.
    loader = stoker.Loader(photos, batch_size=2, size=32, reader="threads:2", prefetch=1, keep=1)
    conv = torch.nn.Conv2d(3, 2, 3)
    losses, outs = [], []
    with pytest.warns(RuntimeWarning, match=r"losses without \.item\(\)"):
        for x, y in loader:
            losses.append(conv(x).mean())  # no .item(): the graph keeps x
            outs.append(x[0])
    assert len(losses) == len(loader)
    again = [x[0].clone() for x, _ in stoker.Loader(photos, batch_size=2, size=32,
                                                      reader="threads:2", prefetch=1, keep=1)]
    for k, (o, r) in enumerate(zip(outs, again)):
        assert torch.equal(o, r), k


@pytest.mark.parametrize("reader", ["serial", "threads:2"])
def test_holding_past_the_overflow_cap_is_an_error(photos, reader):
    loader = stoker.Loader(photos, batch_size=2, size=32, reader=reader, prefetch=1, keep=1,
                           tensors="numpy", overflow_batches=2)
    it = iter(loader)
    pool = 3 if reader == "serial" else 4
    with pytest.warns(RuntimeWarning):
        held = [next(it) for _ in range(pool - 1 + 2)]  # the pool but one, then 2 copies
    with pytest.raises(RuntimeError, match=r"2 copied batches \(overflow_batches=2\)"):
        next(it)
    first = held[0][0].copy()
    del held[-1]  # a copy dropped: one more may be made
    x, _ = next(it)
    assert np.array_equal(held[0][0], first) and x.shape == (2, 3, 32, 32)
    del held, x  # everything dropped: the loop goes on
    next(it)


def test_keep_0_still_goes_on(photos):
    # serial with keep=0 promises to hold nothing past next(); a loop that does hold its
    # batch gets copies (the spare buffer) instead of an error, and a normal loop none.
    loader = stoker.Loader(photos, batch_size=2, size=32, reader="serial", keep=0,
                           tensors="numpy")
    it = iter(loader)
    held = next(it)
    with pytest.warns(RuntimeWarning, match="copied out of the pool"):
        x, _ = next(it)
    assert x.shape == (2, 3, 32, 32) and held[0].shape == (2, 3, 32, 32)


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
