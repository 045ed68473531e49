# SPDX-License-Identifier: Apache-2.0
# Options that do nothing in a combination (tools/idle_rules.h, one table): stoker.Loader
# refuses each with a ValueError naming both arguments, and `stoker bench` refuses the same
# combination with exit 2. The cases are generated from the table itself (walked through
# stoker._stoker.idle_rules()), so a rule added for the CLI is a rule tested for Python.
import subprocess

import pytest

import stoker

RULES = stoker._stoker.idle_rules()
DEFAULTS = stoker._stoker.default_kwargs()
# CLI option -> the Python argument that mirrors it.
PY = {cli.split()[0]: name for name, cli in stoker.CLI_NAMES.items()
      if cli and cli.startswith("--")}
# A value to give where the default is no value at all (the CLI refuses an empty one).
GIVEN = {"jitter": "0.4,0.4,0.4,0.1"}


def is_flag(name):
    return isinstance(DEFAULTS[name], bool)


def python_arg(cli, example=None):
    """(name, value): the Python argument standing for `cli` given on a command line."""
    name = PY[cli]
    if is_flag(name):  # decode=False is --no-decode given; drop_last=True is --drop-last
        return name, "(inverted)" not in stoker.CLI_NAMES[name]
    value = example if example is not None else GIVEN.get(name, DEFAULTS[name])
    assert value != "", f"{name}: add a value to give to GIVEN"
    return name, value


def cli_args(cli, example=None):
    name, value = python_arg(cli, example)
    if is_flag(name):
        return [cli]
    if isinstance(value, tuple):
        value = ",".join(f"{x:g}" for x in value)
    return [cli, str(value)]


def cases():
    out = []
    for rule in RULES:
        if rule["trigger"] not in PY:
            continue
        for idle in rule["idle"]:
            out.append(pytest.param(rule, idle, id=f"{rule['trigger']}+{idle}"))
    return out


def test_the_table_is_walked():
    # The loader's rules reach Python: every rule whose trigger is a loader option is one
    # Python expresses wholly; the others are the trainer's (no loader option triggers them).
    loader_rules = [r for r in RULES if r["trigger"] in PY]
    assert {r["trigger"] for r in loader_rules} == {"--transform", "--no-decode"}
    for r in loader_rules:
        assert set(r["idle"]) <= set(PY), f"{r['trigger']}: {set(r['idle']) - set(PY)}"
    assert len(cases()) == sum(len(r["idle"]) for r in loader_rules)


@pytest.mark.parametrize("rule,idle", cases())
def test_python_and_cli_refuse_it(photos, stoker_cli, rule, idle):
    trigger_name, trigger_value = python_arg(rule["trigger"], rule["example"])
    idle_name, idle_value = python_arg(idle)
    with pytest.raises(ValueError) as e:
        stoker.Loader(photos, reader="serial", **{trigger_name: trigger_value,
                                                  idle_name: idle_value})
    text = str(e.value)
    assert text.startswith(f"{idle_name} means nothing with {trigger_name}="), text
    assert idle in text and rule["trigger"] in text, text  # and the CLI's names
    # Either alone is accepted: the refusal is the combination's.
    stoker.Loader(photos, reader="serial", **{trigger_name: trigger_value}).close()
    stoker.Loader(photos, reader="serial", **{idle_name: idle_value}).close()
    # The CLI refuses the same command line, from the same table.
    argv = [stoker_cli, "bench", photos, "--reader", "serial", "--max-batches", "1"]
    argv += cli_args(rule["trigger"], rule["example"]) + cli_args(idle)
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, (argv, run.stderr)
    assert f"{idle} means nothing with {rule['trigger']}" in run.stderr, run.stderr


def test_a_flag_left_at_its_default_is_not_given(photos):
    # decode=False with dct_scaling=True (its default) is the CLI's --no-decode alone.
    stoker.Loader(photos, reader="serial", decode=False, dct_scaling=True).close()
    stoker.Loader(photos, reader="serial", transform="crop", flip=1.0).close()
