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
    (["--reader", "processes:2", "--batch", "16", "--size", "64", "--transform", "center",
      "--seed", "9", "--flip", "0"],
     dict(reader="processes:2", batch_size=16, size=64, transform="center", seed=9, flip=0.0)),
    (["--reader", "uring:8:2", "--batch", "7", "--size", "24", "--no-dct-scaling",
      "--epochs", "2"],
     dict(reader="uring:8:2", batch_size=7, size=24, dct_scaling=False)),
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
