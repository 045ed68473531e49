# SPDX-License-Identifier: Apache-2.0
# Options that do nothing in a combination (tools/options/idle_rules.h, one table, the loader's rules
# made from its option rows): stoker.Loader refuses each with a ValueError naming both
# arguments, and `stoker bench` refuses the same combination with exit 2. The cases are
# generated from the table itself (walked through stoker._stoker.idle_rules()), so a rule
# added for the CLI is a rule tested for Python.
import subprocess

import pytest

import stoker

RULES = stoker._stoker.idle_rules()
ROWS = {r["cli"]: r for r in stoker._stoker.option_rows()}  # CLI option -> its row
# A value to give where the default is no value at all (the CLI refuses an empty one).
GIVEN = {"jitter": "0.4,0.4,0.4,0.1", "null_file": "photo.jpg", "shuffle_buffer": 10,
         "size": 64}
READER = "serial"  # the reader of every case, unless the rule's trigger is the reader


def is_flag(cli):
    return isinstance(ROWS[cli]["default"], bool)


def python_arg(cli, example=None):
    """(name, value): the Python argument standing for `cli` given on a command line."""
    row = ROWS[cli]
    name = row["python"]
    if is_flag(cli):  # decode=False is --no-decode given; drop_last=True is --drop-last
        return name, not row["inverted"]
    value = example if example is not None else GIVEN.get(name, row["default"])
    assert value != "", f"{name}: add a value to give to GIVEN"
    return name, value


def cli_args(cli, example=None):
    name, value = python_arg(cli, example)
    if is_flag(cli):
        return [cli]
    if isinstance(value, tuple):
        value = ",".join(f"{x:g}" for x in value)
    return [cli, str(value)]


def cases():
    out = []
    for rule in RULES:
        if rule["trigger"] not in ROWS:
            continue
        for idle in rule["idle"]:
            out.append(pytest.param(rule, idle, id=f"{rule['trigger']}+{idle}"))
    return out


def test_the_table_is_walked():
    # The loader's rules reach Python: every rule whose trigger is a loader option is one
    # Python expresses wholly; the others are the trainer's (no loader option triggers them).
    loader_rules = [r for r in RULES if r["trigger"] in ROWS]
    assert {r["trigger"] for r in loader_rules} == {
        "--transform", "--no-decode", "--reader", "--size-schedule", "--shard-order", "--source"}
    for r in loader_rules:
        assert set(r["idle"]) <= set(ROWS), f"{r['trigger']}: {set(r['idle']) - set(ROWS)}"
    assert len(cases()) == sum(len(r["idle"]) for r in loader_rules)


def applies_by_default(rule):
    """Whether the rule holds with its trigger left at stoker.Loader's default."""
    if rule["trigger"] == "--reader":
        return True  # the cases' own reader, serial, is not uring
    return rule["trigger"] in ("--shard-order", "--source")  # global, auto


@pytest.mark.parametrize("rule,idle", cases())
def test_python_and_cli_refuse_it(photos, stoker_cli, rule, idle):
    trigger_name, trigger_value = python_arg(rule["trigger"], rule["example"])
    idle_name, idle_value = python_arg(idle)
    base = {} if rule["trigger"] == "--reader" else {"reader": READER}
    with pytest.raises(ValueError) as e:
        stoker.Loader(photos, **base, **{trigger_name: trigger_value, idle_name: idle_value})
    text = str(e.value)
    assert text.startswith(f"{idle_name} means nothing with {trigger_name}="), text
    assert idle in text and rule["trigger"] in text, text  # and the CLI's names
    # The trigger alone is accepted, and so is the idle option where the trigger's default
    # gives it a meaning: the refusal is the combination's.
    stoker.Loader(photos, **base, **{trigger_name: trigger_value}).close()
    if not applies_by_default(rule):
        stoker.Loader(photos, reader=READER, **{idle_name: idle_value}).close()
    # The CLI refuses the same command line, from the same table.
    argv = [stoker_cli, "bench", photos, "--max-batches", "1"]
    argv += [] if rule["trigger"] == "--reader" else ["--reader", READER]
    argv += cli_args(rule["trigger"], rule["example"]) + cli_args(idle)
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, (argv, run.stderr)
    assert f"{idle} means nothing with {rule['trigger']}" in run.stderr, run.stderr


def test_a_flag_left_at_its_default_is_not_given(photos):
    # decode=False with dct_scaling=True (its default) is the CLI's --no-decode alone.
    stoker.Loader(photos, reader="serial", decode=False, dct_scaling=True).close()
    stoker.Loader(photos, reader="serial", transform="crop", flip=1.0).close()


def test_direct_means_something_to_uring_readers_alone(photos):
    for reader in ("serial", "threads:2", "processes:2"):
        with pytest.raises(ValueError, match=r"direct means nothing with reader='"):
            stoker.Loader(photos, reader=reader, direct=True)
