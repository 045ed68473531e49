#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Every path of this repository that a comment, a README or a document names exists (issue
# 44, "truth-keeping"): a file moved or renamed leaves no reader following a dead pointer.
# Scanned: the tracked C++, CUDA, Python, shell and CMake files (their comments and strings)
# and every Markdown file. A path is a token that starts with one of the repository's top
# folders and names a file with a known extension, or a folder (ending in '/'); `a.h/.cc` is
# both files, `file.h:40` the file; a path is found from the root or from the naming file's own
# folder (in tools/README.md, `train/...` is under tools/train/). Tokens with a pattern in them
# (`*`, `<`, `{`, `NNN`, `...`) and the build's outputs are not paths of the tree. A token with
# no extension (`tools/gen/synth_image`) names a folder, a file, a source with that stem
# (`bench/gpu_facts` for gpu_facts.cc) or a program the build makes there (`tools/stoker`: a
# CMake target of that name, in an existing folder). Usage: named_paths_test.py SRC
import os
import re
import subprocess
import sys

TOP = ("augment", "bench", "common", "docs", "examples", "fuzz", "loader", "models", "python",
       "scripts", "tests", "tools", "train")
EXT = r"(?:h|cc|cu|cuh|md|sh|py|txt|json|cmake|toml|cfg|conf|in|c|html|png|jpg)"
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*?)(?:(\.%s)((?:/\.%s)*)|/)(?=[^\w/-]|$)"
                  % ("|".join(TOP), EXT, EXT))
# A token with no extension: not followed by one, by more path, or by a pattern.
BARE = re.compile(r"(?<![\w./-])((?:%s)/[\w/-]*[\w-])(?=[^\w/.<*{-]|\.(?![A-Za-z])|$)"
                  % "|".join(TOP))
STEMS = (".h", ".cc", ".cu", ".py", ".sh", ".md", ".txt")
TARGET = re.compile(r"^\s*(?:add_executable|add_library|stoker_test)\(\s*([\w.-]+)", re.M)
SCANNED = re.compile(r"\.(h|cc|cu|cuh|py|sh|cmake|md)$|(^|/)CMakeLists\.txt$")
PATTERN = re.compile(r"[*<>{}]|NNN|\.\.\.|XXX")
# Named on purpose although absent from the tree: written by the build or a run, or the
# example of what a test refuses.
GENERATED = re.compile(r"^(docs/gpu-runs/\w[\w.-]*/|tests/tools/data/generated|fuzz/crashes/)")
# Not paths of this tree although they look like one: a fuzz seed's list-file entries.
NOT_OURS = {("fuzz/make_seeds.py", "train/" + m) for m in ("cat/1.jpg", "dog/2.jpg")}
NOT_OURS.add(("docs/PERFORMANCE.md", "train" + "/test"))  # prose: the resolution gap of the two


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


def targets(src, files):
    names = set()
    for f in files:
        if f.endswith("CMakeLists.txt"):
            with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
                names.update(TARGET.findall(fh.read()))
    return names


def bare_exists(path, built):
    return (os.path.exists(path) or any(os.path.exists(path + e) for e in STEMS) or
            (os.path.basename(path) in built and os.path.isdir(os.path.dirname(path))))


def main():
    src = sys.argv[1]
    missing = []
    files = [f for f in tracked(src) if SCANNED.search(f)]
    built = targets(src, files)
    for f in files:
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                here = os.path.dirname(f)  # a folder's README, CMakeLists: paths from there too
                for p in named(line):
                    if GENERATED.search(p) or p == f or (f, p) in NOT_OURS:
                        continue
                    if not any(os.path.exists(os.path.join(src, base, p)) for base in ("", here)):
                        missing.append(f"{f}:{n}: {p}")
                for p in BARE.findall(line):
                    if GENERATED.search(p + "/") or (f, p) in NOT_OURS:
                        continue
                    bases = ("", here)
                    if not any(bare_exists(os.path.join(src, b, p), built) for b in bases):
                        missing.append(f"{f}:{n}: {p}")
    for m in missing:
        print("missing:", m)
    print(f"{len(files)} files scanned, {len(missing)} paths named that do not exist")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
