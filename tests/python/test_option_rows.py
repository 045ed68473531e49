# SPDX-License-Identifier: Apache-2.0
# stoker.Loader's keyword arguments are the loader's option rows (tools/options/loader_options.h), the
# CLI's own: walked here row by row, each default is accepted, the bounds are the ones the
# CLI enforces (the same value refused by both), each word is accepted, a bool's inversion is
# the row's, and the Python name maps back to its CLI option. The C++ side of the same rows:
# tests/tools/option_table_test.cc.
import subprocess

import pytest

import stoker

ROWS = stoker._stoker.option_rows()
IDS = [r["python"] for r in ROWS]


def loader(photos, **kwargs):
    """The arguments are accepted (an idle rule's refusal is the combination's, not theirs)."""
    try:
        stoker.Loader(photos, **{"reader": "serial", **kwargs}).close()
    except ValueError as e:  # shuffle_buffer without shard_order="sequential"
        assert "means nothing" in str(e), e


def bench_refuses(stoker_cli, photos, cli, value):
    argv = [stoker_cli, "bench", photos, "--reader", "serial", "--max-batches", "1", cli, value]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return run.returncode == 2 and cli in run.stderr


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_default_is_accepted_and_is_the_defaults(photos, row):
    assert stoker._stoker.default_kwargs()[row["python"]] == row["default"]
    if row["default"] == "":
        return  # no value at all (no jitter)
    loader(photos, **{row["python"]: row["default"]})


@pytest.mark.parametrize("row", [r for r in ROWS if "min" in r or "lo" in r],
                         ids=[r["python"] for r in ROWS if "min" in r or "lo" in r])
def test_bounds_are_the_clis(photos, stoker_cli, row):
    name, cli = row["python"], row["cli"]
    if "min" in row:
        lo, hi, step = row["min"], row["max"], 1
    else:
        lo, hi, step = row["lo"], row["hi"], 0.01
    outside = [v for v in (lo - step, hi + step) if v >= 0 or "lo" in row]
    for v in outside:
        with pytest.raises(ValueError, match=name):
            stoker.Loader(photos, reader="serial", **{name: v})
        assert bench_refuses(stoker_cli, photos, cli, f"{v:g}" if step < 1 else str(v)), v
    # The bounds themselves are accepted (by the argument check: a batch of 2**20 is not
    # worth making, so only the conversion is asked for where the bound is that large).
    for v in (lo, hi):
        if v <= 4096 and not (name == "batch_size" and v > 64):
            loader(photos, size=32, **{name: v})


@pytest.mark.parametrize("row", [r for r in ROWS if r["words"]],
                         ids=[r["python"] for r in ROWS if r["words"]])
def test_every_word_is_accepted_and_nothing_else(photos, row):
    name = row["python"]
    for word in row["words"]:
        try:
            loader(photos, size=32, **{name: word})
        except stoker.Error:
            pass  # accepted as an argument; the data or machine lacks it (nfs, uring)
    with pytest.raises(ValueError, match=name):
        stoker.Loader(photos, **{name: "no-such-word"})


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_python_name_round_trips(row):
    cli = stoker.CLI_NAMES[row["python"]]
    assert cli.split()[0] == row["cli"]
    assert ("(inverted)" in cli) == row["inverted"]
    if row["inverted"]:  # shuffle is --no-shuffle: True by default, the flag is off
        assert row["cli"] == "--no-" + row["python"].replace("_", "-")
        assert row["default"] is True
