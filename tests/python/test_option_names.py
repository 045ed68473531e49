# SPDX-License-Identifier: Apache-2.0
# stoker.Loader's argument names have one source, the module's table (python/src/
# loader_kwargs.cc): CLI_NAMES, the defaults and docs/PYTHON.md's table all name exactly its
# names, and each CLI option a name mirrors is one the CLI offers.
import os
import re
import subprocess

import stoker

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "PYTHON.md")
PYTHON_ONLY = {"tensors", "overflow_batches", "pin_memory"}  # stoker.Loader's own


def documented_names():
    """The backticked names in the first column of PYTHON.md's options table."""
    text = open(DOC).read()
    table = text.split("| Python | CLI | default |", 1)[1].split("\n\n", 1)[0]
    names = set()
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        names.update(re.findall(r"`(\w+)`", first))
    return names


def test_docs_list_exactly_the_names():
    names = set(stoker.CLI_NAMES)
    documented = documented_names()
    assert documented == names, (
        f"docs/PYTHON.md lacks {sorted(names - documented)}, "
        f"documents unknown {sorted(documented - names)}")


def test_defaults_cover_every_name():
    assert set(stoker._stoker.default_kwargs()) == set(stoker.CLI_NAMES) - PYTHON_ONLY


def test_every_name_is_accepted(tmp_path):
    # Each name reaches a setter: passing its default is accepted, an unknown name is not.
    for name, value in stoker._stoker.default_kwargs().items():
        try:
            stoker._stoker.LoaderCore(str(tmp_path / "missing"), {name: value})
        except TypeError as e:
            raise AssertionError(f"{name}: {e}")
        except Exception:
            pass  # the dataset is missing: the arguments were accepted
    try:
        stoker._stoker.LoaderCore(str(tmp_path / "missing"), {"batch": 8})
    except TypeError as e:
        assert "batch" in str(e)
    else:
        raise AssertionError("an unknown name was accepted")


def test_mirrored_cli_options_exist(stoker_cli):
    help_text = subprocess.run([stoker_cli, "bench", "--help"], capture_output=True, text=True,
                               check=True).stdout
    for name, option in stoker.CLI_NAMES.items():
        if option and option.startswith("--"):
            flag = option.split()[0]
            assert re.search(rf"\s{re.escape(flag)}\b", help_text), f"{name}: {flag} not offered"
