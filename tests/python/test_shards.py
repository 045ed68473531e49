# SPDX-License-Identifier: Apache-2.0
# Data parallelism from Python: stoker.Loader(rank=r, world_size=W) takes the shard that rank
# r of `mpirun -np W stoker train` trains on. The oracle is the CLI itself: under mpirun with 2
# processes, its --json gives each rank's chained batch checksum of the epoch, which must
# equal the epoch checksum of the Loader with that rank.
import json
import os
import shutil
import subprocess
import sys

import pytest

import stoker

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip_case  # noqa: E402

MPIRUN_LOCAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                            "mpirun_local.sh")
OPTIONS = dict(batch_size=4, size=32, seed=3, reader="threads:1")


def test_rank_and_world_size_are_checked(photos):
    with pytest.raises(ValueError, match="rank must be below world_size"):
        stoker.Loader(photos, rank=2, world_size=2)
    with pytest.raises(ValueError, match="world_size"):
        stoker.Loader(photos, world_size=0)


def test_shards_split_the_epoch(photos):
    # In order (no shuffle), global step k's 8 samples are [8k, 8k + 8): rank 0 the first 4,
    # rank 1 the next 4 (loader/sampler/sampler.h), every sample once.
    opts = dict(OPTIONS, shuffle=False, drop_last=True, tensors="numpy")
    whole = [int(v) for _, y in stoker.Loader(photos, **opts) for v in y]
    shards = [stoker.Loader(photos, **opts, rank=r, world_size=2) for r in range(2)]
    assert [len(s) for s in shards] == [7, 7]  # 59 photos: 7 global batches of 8
    got = [[int(v) for _, y in s for v in y] for s in shards]
    for r in range(2):
        assert got[r] == [whole[8 * k + 4 * r + i] for k in range(7) for i in range(4)], r


def test_shards_match_mpirun_stoker_train(photos, stoker_cli, tmp_path):
    if shutil.which("mpirun") is None:
        skip_case("no mpirun (Debian: openmpi-bin)")
    out = tmp_path / "train.json"
    cmd = [MPIRUN_LOCAL, "2", stoker_cli, "train", photos, "--arch", "resnet18", "--size", "32",
           "--batch", "4", "--epochs", "1", "--seed", "3", "--reader", "threads:1",
           "--threads", "1", "--no-save", "--no-gaps", "--json", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if run.returncode != 0 and "not built in" in run.stderr + run.stdout:
        skip_case("this stoker has no CPU backend (oneDNN 3; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)")
    assert run.returncode == 0, run.stderr
    doc = json.load(open(out))
    if doc["context"]["world"] != 2:
        skip_case("this stoker was built without MPI (Debian: libopenmpi-dev): each process trained alone")
    cli = doc["results"][0]["data_checksums"]
    assert cli["epoch"] == 0 and len(cli["ranks"]) == 2, cli
    assert cli["ranks"][0] != cli["ranks"][1]
    for r in range(2):
        loader = stoker.Loader(photos, **OPTIONS, rank=r, world_size=2, drop_last=True)
        for _ in loader:
            pass
        assert loader.stats()["epoch_checksums"] == [cli["ranks"][r]], r
