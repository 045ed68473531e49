# SPDX-License-Identifier: Apache-2.0
# reader="auto" (issue 43): the Python loop's own steps choose the reader. Its search switches
# readers mid-epoch while the loop still holds batches (a loop body keeps its batch until the
# next one replaces it, and some keep more): every batch is a fixed reader's, bit for bit, the
# epoch checksums are the same, and held batches are never overwritten by the readers that
# come after theirs.
import numpy as np
import pytest

import stoker


def epochs(loader, n, hold=2):
    """n epochs of (images, labels) copies; the last `hold` batches stay referenced while the
    next one is asked for, and are checked against their copies at the end."""
    out, held = [], []
    for _ in range(n):
        for x, y in loader:
            out.append((x.copy(), y.copy()))
            held.append((x, out[-1][0]))
            held = held[-hold:]
    for x, copy in held:
        assert np.array_equal(x, copy), "a held batch was overwritten"
    return out


def test_auto_gives_a_fixed_readers_batches_while_it_switches(photos):
    kw = dict(batch_size=4, size=32, seed=3, tensors="numpy", keep=2)
    fixed = stoker.Loader(photos, reader="threads:2", **kw)
    want = epochs(fixed, 3)
    auto = stoker.Loader(photos, reader="auto", auto_window=2, auto_search="full", **kw)
    got = epochs(auto, 3)
    assert len(got) == len(want) == 3 * len(fixed)
    for i, ((gx, gy), (wx, wy)) in enumerate(zip(got, want)):
        assert np.array_equal(gy, wy) and np.array_equal(gx, wx), f"batch {i} differs"
    s = auto.stats()
    assert s["epoch_checksums"] == fixed.stats()["epoch_checksums"]
    search = s["reader_tuning"]["searches"][0]
    measured = [c for c in search["tried"] if "skipped" not in c]
    # The full sweep on this machine's cores, each switch mid-epoch with batches held.
    assert len({c["reader"] for c in measured}) >= 3, search["tried"]
    assert search["finished"] and s["reader_tuning"]["chosen"] == search["chosen"], search
    assert all(c["steps"] == 2 and c["steps_per_s"] > 0 for c in measured), measured


def test_auto_options_mean_nothing_without_auto(photos):
    for arg in (dict(auto_window=4), dict(auto_search="full")):
        with pytest.raises(ValueError, match="auto"):
            stoker.Loader(photos, reader="threads:2", **arg)
    with pytest.raises(ValueError, match="expected staged or full"):
        stoker.Loader(photos, reader="auto", auto_search="wide")
