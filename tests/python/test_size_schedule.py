# SPDX-License-Identifier: Apache-2.0
# size_schedule: the size changes with the epoch (FFCV's progressive resizing), each batch
# has its own shape, the pool does not grow, and the data equals `stoker bench
# --size-schedule` (the same epoch checksums) through worker processes.
import json
import subprocess

import pytest

import stoker


def test_schedule_shapes_and_checksums_equal_the_cli(photos, stoker_cli, tmp_path):
    out = tmp_path / "bench.json"
    subprocess.run([stoker_cli, "bench", photos, "--json", str(out), "--reader", "processes:2",
                    "--batch", "8", "--size-schedule", "32:96@0-2", "--epochs", "3", "--seed",
                    "4"], check=True, stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text())["results"][0]
    want = result["epoch_checksums"]
    assert [(s["height"], s["width"]) for s in result["per_size"]] == [(32, 32), (64, 64),
                                                                        (96, 96)]
    loader = stoker.Loader(photos, reader="processes:2", batch_size=8, seed=4,
                           size_schedule="32:96@0-2", tensors="numpy")
    pool = loader.pool_bytes
    shapes = []
    for _ in range(3):
        shapes.append({tuple(images.shape[1:]) for images, _ in loader})
        assert loader.pool_bytes == pool
    assert shapes == [{(3, 32, 32)}, {(3, 64, 64)}, {(3, 96, 96)}]
    assert loader.stats()["epoch_checksums"] == want


def test_schedule_and_size_exclude_each_other_and_bad_text_says_why(photos):
    with pytest.raises(ValueError, match="size means nothing with size_schedule="):
        stoker.Loader(photos, size=64, size_schedule="32:64@0-2")
    with pytest.raises(ValueError, match="MIN 96 is larger than MAX 64"):
        stoker.Loader(photos, size_schedule="96:64@0-2")
