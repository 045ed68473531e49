#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Every path of this repository that a comment, a README or a document names exists (issue
# 44, "truth-keeping"): a file moved or renamed leaves no reader following a dead pointer.
# Scanned: the tracked C++, CUDA, Python, shell and CMake files (their comments and strings)
# and every Markdown file. A path is a token that starts with one of the repository's top
# folders and names a file with a known extension, or a folder (ending in '/'); `a.h/.cc` is
# both files, `file.h:40` the file; a path is found from the root or from the naming file's own
# folder (in tools/README.md, `train/...` is under tools/train/). Tokens with a pattern in them (`*`, `<`, `{`, `NNN`,
# `...`) and the build's outputs are not paths of the tree. Usage: named_paths_test.py SRC
import os
import re
import subprocess
import sys

TOP = ("augment", "bench", "common", "docs", "examples", "fuzz", "loader", "models", "python",
       "scripts", "tests", "tools", "train")
EXT = r"(?:h|cc|cu|cuh|md|sh|py|txt|json|cmake|toml|cfg|conf|in|c|html|png|jpg)"
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*?)(?:(\.%s)((?:/\.%s)*)|/)(?=[^\w/-]|$)"
                  % ("|".join(TOP), EXT, EXT))
SCANNED = re.compile(r"\.(h|cc|cu|cuh|py|sh|cmake|md)$|(^|/)CMakeLists\.txt$")
PATTERN = re.compile(r"[*<>{}]|NNN|\.\.\.|XXX")
# Named on purpose although absent from the tree: written by the build or a run, or the
# example of what a test refuses.
GENERATED = re.compile(r"^(docs/gpu-runs/\w[\w.-]*/|tests/tools/data/generated|fuzz/crashes/)")
# Not paths of this tree although they look like one: a fuzz seed's list-file entries.
NOT_OURS = {("fuzz/make_seeds.py", "train/" + m) for m in ("cat/1.jpg", "dog/2.jpg")}


def tracked(src):
    out = subprocess.run(["git", "-C", src, "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: walk the tree
        files = []
        for root, dirs, names in os.walk(src):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(root, n), src) for n in names]
        return files
    return out.stdout.split()


def named(line):
    for m in PATH.finditer(line):
        stem, ext, more = m.group(1), m.group(2), m.group(3)
        if PATTERN.search(m.group(0)):
            continue
        if ext is None:
            yield stem + "/"
            continue
        yield stem + ext
        for e in re.findall(r"/(\.\w+)", more or ""):
            yield stem + e


def main():
    src = sys.argv[1]
    missing = []
    files = [f for f in tracked(src) if SCANNED.search(f)]
    for f in files:
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                for p in named(line):
                    if GENERATED.search(p) or p == f or (f, p) in NOT_OURS:
                        continue
                    # From the root, or (a folder's README, CMakeLists) from the file's folder.
                    here = os.path.dirname(f)
                    if not any(os.path.exists(os.path.join(src, base, p)) for base in ("", here)):
                        missing.append(f"{f}:{n}: {p}")
    for m in missing:
        print("missing:", m)
    print(f"{len(files)} files scanned, {len(missing)} paths named that do not exist")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
