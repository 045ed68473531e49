# SPDX-License-Identifier: Apache-2.0
# Errors reach Python as exceptions: bad arguments as TypeError/ValueError naming the
# argument, bad data and environment as stoker.Error (a RuntimeError) with the C++ message,
# which names the file and the reason.
import logging
import os
import shutil

import pytest

import stoker


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(batch_size="8"), TypeError, "batch_size"),
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=True), TypeError, "batch_size"),
    (dict(size=4), ValueError, "size"),
    (dict(dtype="f16"), ValueError, "dtype"),
    (dict(layout="chw"), ValueError, "layout"),
    (dict(transform="blur"), ValueError, "transform"),
    (dict(reader="threads:0"), ValueError, "reader"),
    (dict(reader=8), TypeError, "reader"),
    (dict(on_error="ignore"), ValueError, "on_error"),
    (dict(shuffle="yes"), TypeError, "shuffle"),
    (dict(flip=1.5), ValueError, "flip"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(source_kind="s3"), ValueError, "source_kind"),
    (dict(jitter="0.4,0.4"), ValueError, "jitter"),
    (dict(jitter="0,0,0,0.7"), ValueError, "jitter"),
    (dict(grayscale=2.0), ValueError, "grayscale"),
    (dict(grayscale="0.1"), TypeError, "grayscale"),
    (dict(resize_filter="lanczos"), ValueError, "resize_filter"),
    (dict(direct=True), ValueError, "direct"),
    (dict(bacth_size=8), TypeError, "bacth_size"),
    (dict(tensors="jax"), ValueError, "tensors"),
    (dict(size="64x48"), TypeError, r"size must be an int or a \(height, width\) pair.*HxW"),
    (dict(size=2.5), TypeError, r"size must be an int or a \(height, width\) pair"),
    (dict(mean=(0.5, 0.5)), ValueError, "mean must hold three numbers"),
    (dict(std=[1.0]), ValueError, "std must hold three numbers"),
    (dict(mean="0.5"), TypeError, "mean"),
    (dict(overflow_batches=-1), ValueError, "overflow_batches"),
    (dict(overflow_batches="8"), TypeError, "overflow_batches"),
])
def test_bad_arguments(photos, kwargs, exc, name):
    with pytest.raises(exc, match=name):
        stoker.Loader(photos, **kwargs)


def test_bad_source_type():
    with pytest.raises(TypeError, match="source"):
        stoker.Loader(42)


def test_missing_dataset_names_it(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(stoker.Error, match="nowhere") as e:
        stoker.Loader(missing)
    assert isinstance(e.value, RuntimeError)


@pytest.fixture
def with_bad_file(photos, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(photos, root)
    bad = root / "class1" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 this is not a JPEG")
    return str(root), str(bad)


@pytest.mark.parametrize("reader", ["threads:2", "processes:2"])
def test_on_error_fail_names_the_file(with_bad_file, reader):
    root, bad = with_bad_file
    loader = stoker.Loader(root, batch_size=8, size=32, reader=reader, on_error="fail",
                           shuffle=False)
    with pytest.raises(stoker.Error, match="broken.jpg"):
        for _ in loader:
            pass


def test_on_error_skip_reports_the_file(with_bad_file):
    root, bad = with_bad_file
    loader = stoker.Loader(root, batch_size=8, size=32, reader="threads:2", warn=False)
    n = sum(len(y) for _, y in loader)
    assert n == 60  # 59 photos + the broken file's place, taken by a replacement
    errors = loader.stats()["errors"]
    assert errors["files"] == 1 and errors["list"][0]["path"].endswith("broken.jpg")
    assert errors["list"][0]["reason"]


@pytest.mark.parametrize("reader", ["threads:2", "processes:2"])
def test_skip_warnings_go_to_pythons_logging(with_bad_file, reader, caplog, capfd):
    # The library's warning (common/log.h) reaches logging.getLogger("stoker"), where a user
    # can redirect it, and nothing of it is written to stderr behind logging's back.
    root, bad = with_bad_file
    with caplog.at_level(logging.WARNING, logger="stoker"):
        loader = stoker.Loader(root, batch_size=8, size=32, reader=reader)
        for _ in loader:
            pass
        loader.close()
    records = [r for r in caplog.records if r.name == "stoker"]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert "skipping sample" in records[0].getMessage()
    assert "broken.jpg" in records[0].getMessage()
    assert "skipping sample" not in capfd.readouterr().err


def test_stats_have_the_bench_fields(photos):
    loader = stoker.Loader(photos, batch_size=8, size=32, reader="threads:2")
    for _ in loader:
        pass
    s = loader.stats()
    assert s["batches"] == 8 and s["images"] == 59
    for stage in ("read", "decode", "augment", "collate"):
        assert s["stage_ms_per_image"][stage] >= 0
        assert set(s["stage_ms"][stage]) == {"mean", "p50", "p90", "p99", "max"}
    assert s["stage_ms_per_image"]["decode"] > 0
    w = s["batch_wait_ms"]
    assert 0 <= w["p50"] <= w["p90"] <= w["p99"] <= w["max"]
    assert len(s["epoch_checksums"]) == 1 and s["images_per_s"] > 0


def test_a_closed_loader_says_so(photos):
    loader = stoker.Loader(photos, batch_size=8, size=32, reader="threads:2")
    loader.close()
    for use in (iter, len, lambda x: x.state_dict(), lambda x: x.classes):
        with pytest.raises(RuntimeError, match="closed"):
            use(loader)


def test_an_empty_class_warns_as_the_cli_does(photos, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(photos, root)
    (root / "class9").mkdir()
    with pytest.warns(UserWarning, match="1 class directories of .* hold no image: class9"):
        loader = stoker.Loader(str(root), batch_size=8, size=32, reader="threads:2")
    assert loader.classes[-1] == "class9"


def test_a_list_file_keeps_the_class_names(photos, tmp_path, stoker_cli):
    import subprocess
    listing = tmp_path / "list.txt"
    subprocess.run([stoker_cli, "index", photos, "--out", str(listing)], check=True,
                   stdout=subprocess.DEVNULL)
    folder = stoker.Loader(photos, batch_size=8, size=32, reader="threads:2")
    listed = stoker.Loader(str(listing), batch_size=8, size=32, reader="threads:2")
    assert listed.classes == folder.classes == ["class0", "class1", "class2", "class3"]
