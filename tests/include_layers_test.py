#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The include graph keeps its layers: common <- augment, models <- loader <- train <- tools,
# python; inside loader/, sources know byte locations only (never the index, the sampler or
# a reader) and the index knows sources only. Fails naming each include that runs upward.
# Reads the tree's #include "folder/..." lines; no build needed. Usage: include_layers_test.py ROOT
import pathlib
import re
import sys

# folder -> the folders its files may include (its own always allowed).
ALLOWED = {
    "common": set(),
    "augment": {"common"},
    "models": {"common"},
    "loader": {"common", "augment", "models"},
    "train": {"common", "augment", "models", "loader"},
    "tools": {"common", "augment", "models", "loader", "train"},
    "python": {"common", "augment", "models", "loader", "train", "tools"},
}
# The lower parts of loader/: part -> loader parts it may include.
LOADER_PARTS = {
    "sources": set(),
    "index": {"sources"},
    "sampler": {"index", "sources"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)
SUFFIXES = {".h", ".cc", ".cu", ".cuh"}


def violations(root):
    for folder, allowed in ALLOWED.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            rel = path.relative_to(root)
            part = rel.parts[1] if folder == "loader" and len(rel.parts) > 2 else None
            for m in INCLUDE.finditer(text):
                top, rest = m.group(1), m.group(2)
                if top not in ALLOWED:
                    continue  # a system or third-party header with a folder, say
                if top != folder and top not in allowed:
                    yield f"{rel}: includes {top}/{rest}: {folder}/ may include only {sorted(allowed)}"
                elif top == "loader" and part in LOADER_PARTS:
                    target = rest.split("/")[0] if "/" in rest else None
                    if target != part and target not in LOADER_PARTS[part]:
                        yield (f"{rel}: includes loader/{rest}: loader/{part}/ may include only "
                               f"loader/{sorted(LOADER_PARTS[part])}")


def main():
    if len(sys.argv) != 2:
        print("usage: include_layers_test.py ROOT", file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    if not (root / "loader").is_dir():
        print(f"include_layers: {root} has no loader/ folder: not the repository root", file=sys.stderr)
        return 2
    found = list(violations(root))
    for v in found:
        print(v)
    print(f"include_layers: {len(found)} includes running upward")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
