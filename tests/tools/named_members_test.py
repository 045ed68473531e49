#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Every `Type::member` that a C++ comment or a Markdown file names is still a member of that
# type (issue 44, "truth-keeping"): a field or function renamed leaves no comment pointing at
# its old name (SampleTiming::worker, long after it became SampleTiming::thread). A Type is a
# struct, class or enum this tree defines; the member (lower case: a field, a function, an
# enumerator) must appear as a word in a file that defines it (coarse: any file defining a
# type of that name counts). A comment line ending in `Type::` continues on the next one.
# Usage: named_members_test.py SRC
import os
import re
import subprocess
import sys
from collections import defaultdict

CPP = re.compile(r"\.(h|cc|cu|cuh)$")
# A definition, not a forward declaration: `{` comes before any `;`.
DEFINES = re.compile(r"^\s*(?:struct|class|enum class|enum)\s+([A-Z]\w*)\b(?![^{;]*;)", re.M)
NAMED = re.compile(r"\b([A-Z]\w*)::([a-z_]\w*)\b")


def tracked(src):
    out = subprocess.run(["git", "-C", src, "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"named_members: {src} is not a git checkout")
    return out.stdout.split()


def comment_lines(path, text):
    """(line number, text) of what a reader reads as prose: C++ comments, all of Markdown."""
    if not CPP.search(path):
        yield from enumerate(text.splitlines(), 1)
        return
    carried = ""
    for n, line in enumerate(text.splitlines(), 1):
        at = line.find("//")
        if at < 0:
            carried = ""
            continue
        prose = carried + line[at + 2:].strip()
        carried = ""
        m = re.search(r"\b[A-Z]\w*::$", prose)
        if m:  # `Type::` at the line's end: its member opens the next comment line
            carried, prose = m.group(0), prose[:m.start()]
        yield n, prose


def main():
    src = sys.argv[1]
    files = tracked(src)
    texts = {}
    defined_in = defaultdict(list)
    for f in files:
        if CPP.search(f):
            with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
                texts[f] = fh.read()
            for m in DEFINES.finditer(texts[f]):
                defined_in[m.group(1)].append(f)
    stale = []
    scanned = [f for f in files if CPP.search(f) or f.endswith(".md")]
    for f in scanned:
        if f not in texts:
            with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
                texts[f] = fh.read()
        for n, prose in comment_lines(f, texts[f]):
            for type_, member in NAMED.findall(prose):
                homes = defined_in.get(type_)
                word = re.compile(r"\b%s\b" % re.escape(member))
                if homes and not any(word.search(texts[h]) for h in homes):
                    stale.append(f"{f}:{n}: {type_}::{member} (not in {', '.join(homes)})")
    for s in stale:
        print("stale:", s)
    print(f"{len(scanned)} files scanned, {len(stale)} members named that their type lacks")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
