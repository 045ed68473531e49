# SPDX-License-Identifier: Apache-2.0
# The same options give the same data from Python as from `stoker bench`: equal epoch
# checksums (labels and every sample's bytes, in order) for each reader and output format.
import json
import subprocess

import pytest

import stoker

CASES = [
    # (CLI options, Python keyword arguments)
    (["--reader", "threads:2", "--batch", "8", "--size", "48", "--seed", "3"],
     dict(reader="threads:2", batch_size=8, size=48, seed=3)),
    (["--reader", "serial", "--batch", "5", "--size", "32", "--dtype", "u8", "--layout", "nhwc",
      "--transform", "crop", "--no-shuffle", "--drop-last"],
     dict(reader="serial", batch_size=5, size=32, dtype="u8", layout="nhwc", transform="crop",
          shuffle=False, drop_last=True)),
    # (--flip is refused with --transform center, which never flips: issue 26)
    (["--reader", "processes:2", "--batch", "16", "--size", "64", "--transform", "center",
      "--seed", "9"],
     dict(reader="processes:2", batch_size=16, size=64, transform="center", seed=9)),
    (["--reader", "uring:8:2", "--batch", "7", "--size", "24", "--no-dct-scaling",
      "--epochs", "2"],
     dict(reader="uring:8:2", batch_size=7, size=24, dct_scaling=False)),
    # --size HxW and --mean/--std: the same output through worker processes.
    (["--reader", "processes:2", "--batch", "6", "--size", "40x56", "--mean", "0.5,0.4,0.3",
      "--std", "0.2,0.25,0.3"],
     dict(reader="processes:2", batch_size=6, size=(40, 56), mean=(0.5, 0.4, 0.3),
          std=(0.2, 0.25, 0.3))),
]


@pytest.mark.parametrize("cli, kwargs", CASES, ids=[c[1]["reader"] for c in CASES])
def test_same_checksums_as_the_cli(photos, stoker_cli, tmp_path, cli, kwargs):
    out = tmp_path / "bench.json"
    subprocess.run([stoker_cli, "bench", photos, "--json", str(out), *cli], check=True,
                   stdout=subprocess.DEVNULL)
    want = json.loads(out.read_text())["results"][0]["epoch_checksums"]
    loader = stoker.Loader(photos, **kwargs)
    for _ in want:  # as many epochs as the CLI ran
        for _ in loader:
            pass
    got = loader.stats()["epoch_checksums"]
    assert got == want and len(set(got)) == len(got)


def test_non_square_custom_normalisation(photos):
    """size=(h, w) gives [n, 3, h, w]; f32 with a custom mean/std is exactly (u8 / 255 - mean)
    / std in float32 of the same samples (same seed: same crops and flips)."""
    import numpy as np
    kw = dict(reader="serial", batch_size=4, size=(40, 56), seed=5, tensors="numpy")
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    a, b = stoker.Loader(photos, mean=mean, std=std, **kw), stoker.Loader(photos, dtype="u8", **kw)
    f32 = np.array(next(iter(a))[0])  # copies: the batch goes back to its pool
    u8 = np.array(next(iter(b))[0])
    assert f32.shape == (4, 3, 40, 56) and u8.shape == (4, 3, 40, 56)
    m = np.array(mean, np.float32).reshape(1, 3, 1, 1)
    s = np.array(std, np.float32).reshape(1, 3, 1, 1)
    want = (u8.astype(np.float32) / np.float32(255) - m) / s
    assert np.array_equal(np.asarray(f32), want)
