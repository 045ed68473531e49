#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The commands that README.md and docs/*.md show in their code blocks run as written (issue
# 47: `mpirun -np 4 stoker train ...` failed as root and on 2 cores). Each is run from a
# scratch folder with `stoker` on PATH and scripts/ beside it, in its block's order (a block's
# shell variables are kept), and must exit 0, or still be running after its time (it got past
# its options and its data: a study or a long run is stopped there; one whose --save a later
# line reads must finish), or fail for a reason of
# this machine that the command cannot help: no CUDA device, no NFS server, a file an earlier
# stopped command did not finish. A usage error (exit 2) or any other failure fails the test.
# Liberties, so that it runs in minutes on 2 cores: the README's data/synth is small (2
# classes of 64 images), and the paths that name the reader's own storage
# (/data/imagenet/train, /mnt/nfs/..., data/train, data/val, /data/rNNN) are the generated set.
# Not run: the set-up and test scripts (CI runs them), the GPU bundle, the fuzzer, synopses,
# mpirun over a cluster's hosts (--hostfile).
# Usage: doc_commands_test.py STOKER SRC [--seconds S] [--only TEXT]
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

NOT_RUN = {  # first word -> why
    "scripts/run.sh": "the set-up itself (tests/tools/run_script_test.sh)",
    "scripts/test.sh": "the whole test suite (CI runs it)",
    "scripts/deps.sh": "installs packages",
    "scripts/fuzz.sh": "the fuzzer (docs/FUZZING.md; build-fuzz/)",
    "scripts/gpu_bundle.sh": "the GPU bundle's lean build (tests/tools/gpu_bundle_chroot_test.sh)",
    "scripts/nfs_serve.sh": "starts an NFS server (the nfs tests start their own)",
}
COMMAND = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:time\s+|/usr/bin/time\s+-v\s+)*"
                     r"(stoker|scripts/\S+|mpirun)\b")
# A reason of this machine, not of the command (stderr).
ENVIRONMENT = re.compile(
    r"CUDA|cuda|GPU|nvJPEG|NFS server|nfs://|portmapper")
OUTPUT = re.compile(r"(?:--save|--out|-o|--json)\s+(\S+)")
STORAGE = [  # the reader's own storage in the docs -> the generated set
    (r"/mnt/nfs/imagenet/train|/mnt/nfs/train|/data/imagenet/train|\bdata/train\b",
     "data/synth/256px"),
    (r"\bdata/val\b", "data/synth/256px"),
    (r"/data/r(256|512|1024)\b", r"data/synth/\1px"),
    (r"(?<![\w/])/tmp/", "tmp/"),  # outputs stay in the scratch folder
]


def blocks(path):
    """Each shell code block of a Markdown file (fenced sh/bash/unmarked, or indented four
    spaces outside a list) as its lines; blocks of another language are left out."""
    out, fence, keep, indented = [], None, False, []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if fence is not None:
            if line.startswith("```"):
                if keep:
                    out.append(fence)
                fence = None
            else:
                fence.append(line)
            continue
        m = re.match(r"^```(\w*)", line)
        if m:
            fence, keep = [], m.group(1) in ("", "sh", "bash", "shell")
            continue
        if line.startswith("    ") and not line.lstrip().startswith(("-", "*")):
            indented.append(line[4:])
        elif indented:
            out.append(indented)
            indented = []
    if indented:
        out.append(indented)
    return out


def strip_comment(line):
    """The line without its trailing `# ...` comment (a # after a space, outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands(block):
    """(kind, text) for each logical line: 'set' (a variable), 'run', or None (other)."""
    joined, cur = [], ""
    for line in block:
        line = strip_comment(line)
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        joined.append(cur + line)
        cur = ""
    out = []
    pending = ""  # a quoted assignment split over lines ends at its closing quote
    for line in joined:
        text = (pending + " " + line.strip()) if pending else line.strip()
        if re.match(r"^\w+=\"", text) and text.count('"') % 2:
            pending = text
            continue
        pending = ""
        if re.match(r"^\w+=(\"[^\"]*\"|\S*)$", text):
            out.append(("set", text))
        elif COMMAND.match(text):
            out.append(("run", text))
    return out


def cluster(text):
    """mpirun over machines named by a host file or list: not this machine's to run (an
    mpirun without them runs here, and must work as written: issue 47)."""
    return re.match(r"^mpirun\b.*\s(--hostfile|--host|-H)\s", text) is not None


def synopsis(text):
    """A usage line (`[--port N|auto]`, `DIR`, `...`), not a command to run."""
    return "..." in text or re.search(r"\[--|\bDIR\b|\bSDIR\b|\|auto", text) is not None


def adapt(text):
    """The liberties: small datasets, the generated set for the reader's own storage."""
    if re.search(r"\bstoker gen data/synth\b", text):  # 128 images: 4 ranks' batches of 32
        text = re.sub(r"--classes \d+", "--classes 2", text)
        text = re.sub(r"--per-class \d+", "--per-class 64", text)
    for pattern, repl in STORAGE:
        text = re.sub(pattern, repl, text)
    return text


def first_word(text):
    m = COMMAND.match(text)
    return m.group(1) if m else ""


def run_one(text, env_lines, cwd, env, seconds, unfinished):
    """(outcome, output) of `text` run by bash after the block's variables; a command still
    running after `seconds` is stopped (SIGTERM, then SIGKILL after 60 s) with everything it
    started in its own session."""
    p = subprocess.Popen(["bash", "-c", "\n".join(env_lines + [text])], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        # SIGTERM first, as a user's Ctrl-C or a scheduler would: stoker keeps what finished and
        # stops what it started outside this session (a study's NFS servers run in their own).
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        return "running", ""
    if p.returncode == 0:
        return "ok", err
    if p.returncode == 2:
        return "usage", err
    if ENVIRONMENT.search(err):
        return "environment", err
    if any(path in err for path in unfinished):  # an earlier command stopped before writing it
        return "environment", err
    return f"failed (exit {p.returncode})", out[-1500:] + err[-1500:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stoker")
    ap.add_argument("src")
    ap.add_argument("--seconds", type=float, default=20,
                    help="a command still running after this got past its options and data")
    ap.add_argument("--save-seconds", type=float, default=300,
                    help="the time of a command whose --save file a later command reads")
    ap.add_argument("--only", default="", help="run only commands containing this text")
    ap.add_argument("--list", action="store_true", help="print the commands, run none")
    a = ap.parse_args()
    docs = [os.path.join(a.src, "README.md")] + sorted(glob.glob(os.path.join(a.src, "docs",
                                                                              "*.md")))
    work = tempfile.mkdtemp(prefix="doc_commands.")
    bindir = os.path.join(work, ".bin")
    os.makedirs(bindir)
    os.symlink(os.path.abspath(a.stoker), os.path.join(bindir, "stoker"))
    os.symlink(os.path.join(os.path.abspath(a.src), "scripts"), os.path.join(work, "scripts"))
    # build/...: the build tree the binary is in (build/tools/stoker).
    os.symlink(os.path.dirname(os.path.dirname(os.path.abspath(a.stoker))),
               os.path.join(work, "build"))
    # XDG_CACHE_HOME: the built-in datasets of bench and study --quick stay in the scratch
    # folder (a stopped study leaves one half made).
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], OMP_NUM_THREADS="2",
               XDG_CACHE_HOME=os.path.join(work, ".cache"))
    # Every block's lines in the docs' order: a line may read what an earlier one wrote.
    lines = [(os.path.relpath(doc, a.src), i, kind, text) for doc in docs
             for i, block in enumerate(blocks(doc)) for kind, text in commands(block)]
    failures, counts, unfinished, env_lines, block_of = [], {}, set(), [], None
    try:
        for k, (name, block, kind, text) in enumerate(lines):
            if (name, block) != block_of:  # a block's variables are its own
                env_lines, block_of = [], (name, block)
            if kind == "set":
                env_lines.append(text)
                continue
            if first_word(text) in NOT_RUN or synopsis(text) or cluster(text):
                counts["not run"] = counts.get("not run", 0) + 1
                continue
            if a.only and a.only not in text:
                continue
            if a.list:
                print(f"{name}: {adapt(text)}")
                continue
            # A checkpoint a later line resumes or evaluates must be finished.
            later = " ".join(t for _, _, _, t in lines[k + 1:])
            needed = any(path in later for path in re.findall(r"--save\s+(\S+)", text))
            outcome, err = run_one(adapt(text), env_lines, work, env,
                                   a.save_seconds if needed else a.seconds, unfinished)
            if outcome == "running":
                unfinished.update(OUTPUT.findall(text))
            counts[outcome.split()[0]] = counts.get(outcome.split()[0], 0) + 1
            print(f"{outcome:>14}  {name}: {text}", flush=True)
            if outcome not in ("ok", "running", "environment"):
                failures.append((name, text, outcome, err.strip()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("# " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    for name, text, outcome, err in failures:
        print(f"FAIL: {name}: `{text}`: {outcome}\n{err}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
