#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# docs/CLI.md and `stoker SUB --help` name the same options, so the docs cannot drift:
# every option a subcommand's --help offers is in that subcommand's section of docs/CLI.md
# (or, for the loader's options, in bench's "Loader options" table that the section refers
# to), and every option a section's table documents is offered by that subcommand's --help.
# Usage: cli_doc_test.py STOKER DOCS/CLI.md
import re
import subprocess
import sys

stoker, doc_path = sys.argv[1], sys.argv[2]
SUBCOMMANDS = ["gen", "bench", "peek", "probe", "index", "pack", "model", "checkpoint init",
               "checkpoint info", "train", "eval", "study", "report"]
OPTION = re.compile(r"--[a-z0-9][a-z0-9-]*")


def help_options(sub):
    out = subprocess.run([stoker, *sub.split(), "--help"], capture_output=True, text=True,
                         check=True).stdout
    opts = set()
    for line in out.splitlines():
        m = re.match(r"\s+(?:-\w,\s*)?(--[a-z0-9-]+)", line)
        if m:
            opts.add(m.group(1))
    return opts - {"--help", "--version"}


def sections(text):
    """'## `stoker X ...`' heading -> its text up to the next '## ' heading."""
    out, name, body = {}, None, []
    for line in text.splitlines():
        m = re.match(r"## `stoker (\w+)", line)
        if line.startswith("## "):
            if name:
                out[name] = "\n".join(body)
            name, body = (m.group(1) if m else None), [line]  # the heading names options too
        elif name:
            body.append(line)
    if name:
        out[name] = "\n".join(body)
    return out


def table_options(text):
    return {OPTION.match(cell).group(0)
            for cell in re.findall(r"^\| `(--[^`]*)`", text, re.M)}


doc = sections(open(doc_path).read())
loader_table = doc["bench"].split("Loader options", 1)[1]
loader = table_options(loader_table)
problems = []
for sub in SUBCOMMANDS:
    top = sub.split()[0]
    body = doc.get(top)
    if body is None:
        problems.append(f"docs/CLI.md has no section '## `stoker {top}'")
        continue
    offered = help_options(sub)
    documented = set(OPTION.findall(body))
    refers_to_loader = top == "bench" or re.search(r"[Ll]oader(?:'s)? options|the loader's", body)
    for opt in sorted(offered):
        if opt in documented or (refers_to_loader and opt in loader):
            continue
        problems.append(f"stoker {sub} --help offers {opt}, which its docs/CLI.md section does not name")
    # The reverse: a table row of the section names an option the command does not have.
    rows = table_options(body if top != "bench" else body.split("Loader options", 1)[0])
    if top == "checkpoint":
        continue  # one section for both: checked through the prose above
    for opt in sorted(rows - offered):
        problems.append(f"docs/CLI.md documents {opt} for stoker {sub}, which its --help does not offer")
for p in problems:
    print("FAIL:", p)
if problems:
    sys.exit(1)
print(f"PASS: {len(SUBCOMMANDS)} subcommands' --help options match docs/CLI.md")
