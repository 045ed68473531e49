# SPDX-License-Identifier: Apache-2.0
# Exact resume (torchdata StatefulDataLoader's contract): an epoch split in two by
# state_dict()/load_state_dict(), in a fresh loader, yields exactly the batches of the
# uninterrupted epoch; so does a state taken at an epoch's end.
import pytest
import torch

import stoker

OPTS = dict(batch_size=6, size=40, seed=11, transform="rrc")


def batches(loader, n=None):
    out = []
    for x, y in loader:
        out.append((x.clone(), y.clone()))
        if n is not None and len(out) == n:
            break
    return out


def same(a, b):
    return len(a) == len(b) and all(torch.equal(x, u) and torch.equal(y, v)
                                    for (x, y), (u, v) in zip(a, b))


@pytest.mark.parametrize("reader", ["serial", "threads:2", "processes:2"])
def test_split_epoch(photos, reader):
    full = stoker.Loader(photos, reader=reader, **OPTS)
    full.set_epoch(3)
    whole = batches(full)
    assert len(whole) == len(full) == 10  # 59 photos in batches of 6

    first = stoker.Loader(photos, reader=reader, **OPTS)
    first.set_epoch(3)
    head = batches(first, 4)
    state = first.state_dict()
    assert state["epoch"] == 3 and state["position"] == 24 and state["seed"] == 11
    del first

    second = stoker.Loader(photos, reader=reader, **OPTS)
    second.load_state_dict(state)
    tail = batches(second)
    assert same(head + tail, whole)
    # A finished epoch's state is the start of the next one.
    assert second.state_dict()["epoch"] == 4 and second.state_dict()["position"] == 0


def test_epochs_differ_and_repeat(photos):
    a = stoker.Loader(photos, reader="threads:2", **OPTS)
    e0, e1 = batches(a), batches(a)  # a finished epoch moves on to the next
    assert not same(e0, e1)
    a.set_epoch(0)
    assert same(batches(a), e0)


def test_state_from_another_configuration_is_refused(photos):
    a = stoker.Loader(photos, reader="serial", **OPTS)
    state = a.state_dict()
    b = stoker.Loader(photos, reader="serial", **dict(OPTS, seed=12))
    with pytest.raises(ValueError, match="seed"):
        b.load_state_dict(state)
    with pytest.raises(ValueError, match="position"):
        a.load_state_dict(dict(state, position=5))


def test_set_epoch_keeps_the_loaded_position(photos):
    """The README's loop calls set_epoch every epoch: after load_state_dict, set_epoch of the
    state's epoch resumes where the state was taken (issue 47: it replayed the whole epoch)."""
    full = stoker.Loader(photos, reader="serial", **OPTS)
    epochs = []
    for epoch in range(2, 4):
        full.set_epoch(epoch)
        epochs.append(batches(full))

    first = stoker.Loader(photos, reader="serial", **OPTS)
    first.set_epoch(2)
    head = batches(first, 4)
    state = first.state_dict()
    del first

    second = stoker.Loader(photos, reader="serial", **OPTS)
    second.load_state_dict(state)
    got = []
    for epoch in range(state["epoch"], 4):
        second.set_epoch(epoch)
        assert epoch != 2 or second.state_dict()["position"] == 24
        got.append(batches(second))
    assert len(got[0]) == 6  # the 10 - 4 batches left of epoch 2
    assert same(head + got[0], epochs[0]) and same(got[1], epochs[1])


def test_set_epoch_of_another_epoch_drops_the_position(photos):
    a = stoker.Loader(photos, reader="serial", **OPTS)
    a.set_epoch(5)
    whole = batches(a)
    a.load_state_dict(dict(a.state_dict(), epoch=3, position=24))
    with pytest.warns(UserWarning, match=r"set_epoch\(5\).*epoch 3, sample 24.*dropped"):
        a.set_epoch(5)
    assert a.state_dict()["position"] == 0 and same(batches(a), whole)
