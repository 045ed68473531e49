#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Gathers scripts/gpu_check.sh's work folder into one JSON document and prints its tables.

Reads what the steps left (steps.tsv, env.txt, gtest JSON, `stoker train --json`,
torch_gpu_bench.py's JSON, `stoker bench --json`, nvidia-smi memory samples) and writes
{context, steps, tests, synthetic{stoker, torch}, loader}. A missing or broken file is
recorded as such: a failed step never hides the others. Standard library only.
  gpu_check_summary.py --work DIR --out FILE [--dry-run 0|1] [--seconds N]
  gpu_check_summary.py --rate FILE...   (images/s of the first readable train JSON)
"""
import argparse
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def lines(path):
    try:
        with open(path) as f:
            return [ln.rstrip("\n") for ln in f]
    except OSError:
        return []


def tsv(path):
    return [ln.split("\t") for ln in lines(path) if ln]


def result_of(doc):
    """The flat record of a {context, results:[one]} document, context merged in."""
    if not doc or not doc.get("results"):
        return None
    r = dict(doc["results"][0])
    r.update(doc.get("context", {}))
    return r


def peak_mib(path, idle):
    vals = [float(v) for v in lines(path) if v.strip().replace(".", "", 1).isdigit()]
    return round(max(vals) - idle, 1) if vals else None


def gtest_counts(path):
    doc = load(path)
    if not doc:
        return None
    c = {"tests": doc.get("tests", 0), "failures": doc.get("failures", 0), "disabled": doc.get("disabled", 0)}
    skipped = failed = 0
    names = []
    for suite in doc.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("result") == "SKIPPED":
                skipped += 1
            if t.get("failures"):
                failed += 1
                names.append(f"{suite['name']}.{t['name']}")
    c.update(skipped=skipped, failed_names=names[:20])
    return c


def stoker_row(work, tag, args, rc, idle):
    r = result_of(load(os.path.join(work, f"stoker_{tag}.json")))
    row = {"run": tag, "exit": rc, "args": args}
    if r:
        gaps = r.get("gaps") or {}
        # null when stoker refused the rate as a measurement error (above the GPU's peak):
        # rate_refused then says why (docs/FORMATS.md, rate_check).
        ips = r.get("images_per_s")
        check = r.get("rate_check") or {}
        row.update(images_per_s=round(ips, 1) if ips is not None else None,
                   rate_refused=check.get("message") or None,
                   engine_step_ms_median=(r.get("engine_step_ms") or {}).get("median"),
                   step_ms_median=(r.get("step_ms") or {}).get("median"),
                   data_wait_share=round(r.get("data_wait_fraction", 0), 4),
                   kernel_gap_share=round(gaps["share"], 4) if "share" in gaps else None,
                   backend=r.get("backend"), steps=r.get("steps"))
    else:
        tail = lines(os.path.join(work, f"stoker_{tag}.out"))[-3:]
        row["error"] = " | ".join(tail) or "no output"
    row["peak_gpu_memory_mib"] = peak_mib(os.path.join(work, f"stoker_{tag}.mem"), idle)
    return row


def loader_rows(work, runs, idle):
    rows = []
    for tag, rc, args in runs:
        if not tag.startswith("loader_"):
            continue
        key = tag[len("loader_"):]
        row = stoker_row(work, tag, args, rc, idle)
        b = result_of(load(os.path.join(work, f"bench_{key}.json")))
        if b and b.get("emulation"):
            e = b["emulation"]
            row["emulated"] = {"images_per_s": round(b.get("images_per_s", 0), 1), "au": round(e["au"], 4),
                               "data_wait_share": round(e["data_wait_s"] / e["window_s"], 4) if e.get("window_s") else None,
                               "compute_images_per_s": e.get("images_per_s")}
        else:
            row["emulated"] = {"error": " | ".join(lines(os.path.join(work, f"bench_{key}.out"))[-2:]) or "not run"}
        rows.append(row)
    return rows


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def print_tables(doc):
    print("\nsynthetic ResNet: Stoker")
    print(f"  {'run':24} {'img/s':>9} {'peak MiB':>9}  note")
    for r in doc["synthetic"]["stoker"]:
        print(f"  {r['run']:24} {fmt(r.get('images_per_s')):>9} {fmt(r.get('peak_gpu_memory_mib')):>9}  "
              f"{r.get('error', r.get('skipped', ''))}")
    t = doc["synthetic"]["torch"]
    print("synthetic ResNet: PyTorch " + str((t.get("context") or {}).get("torch", "")))
    for r in t.get("results", []):
        print(f"  {r['variant']:24} {fmt(r.get('images_per_s')):>9} {fmt(r.get('peak_reserved_mib')):>9}  "
              f"{r.get('error', '')}")
    print("loader-fed (train, and bench --emulate at Stoker's compute rate)")
    print(f"  {'size_reader':20} {'img/s':>8} {'wait%':>6} {'gap%':>6} {'emu img/s':>10} {'emu wait%':>9}")
    for r in doc["loader"]:
        e = r.get("emulated", {})
        pct = lambda v: fmt(None if v is None else 100 * v)
        print(f"  {r['run'][len('loader_'):]:20} {fmt(r.get('images_per_s')):>8} {pct(r.get('data_wait_share')):>6} "
              f"{pct(r.get('kernel_gap_share')):>6} {fmt(e.get('images_per_s')):>10} {pct(e.get('data_wait_share')):>9}"
              f"  {r.get('error', '')}")
    print("steps: " + ", ".join(f"{s['step']} {s['status']} {s['seconds']}s" for s in doc["steps"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work")
    ap.add_argument("--out")
    ap.add_argument("--dry-run", default="0")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--rate", nargs="+", help="print the images/s of the first readable train JSON")
    a = ap.parse_args()
    if a.rate:
        for path in a.rate:
            r = result_of(load(path))
            if r and r.get("images_per_s"):
                print(f"{max(r['images_per_s'], 0.1):.1f}")
                return 0
        return 1
    if not a.work or not a.out:
        ap.error("--work and --out are needed")
    w = a.work
    env = dict(ln.split(" ", 1) for ln in lines(os.path.join(w, "env.txt")) if " " in ln)
    idle = float(env.get("gpu_idle_mib", "0") or 0) if env.get("gpu_idle_mib", "").strip().isdigit() else 0.0
    steps = [{"step": s[0], "status": s[1], "seconds": int(s[2]), "budget_s": int(s[3]), "note": s[4] if len(s) > 4 else ""}
             for s in tsv(os.path.join(w, "steps.tsv"))]
    tests = {t: {"exit": int(rc), "skipped": rc == "77", **(gtest_counts(os.path.join(w, f"gtest_{t}.json")) or {})}
             for t, rc in tsv(os.path.join(w, "tests.tsv"))}
    runs = tsv(os.path.join(w, "stoker_runs.tsv"))
    synthetic = []
    for tag, rc, *args in runs:
        if tag.startswith("loader_"):
            continue
        if rc == "skipped":
            synthetic.append({"run": tag, "skipped": args[0] if args else ""})
        else:
            synthetic.append(stoker_row(w, tag, args[0] if args else "", int(rc), idle))
    torch_doc = load(os.path.join(w, "torch.json")) or {"error": "torch_gpu_bench.py wrote nothing"}
    torch_doc["peak_gpu_memory_mib_whole_process"] = peak_mib(os.path.join(w, "torch.mem"), idle)
    uring = lines(os.path.join(w, "uring.out"))
    doc = {
        "context": {"tool": "scripts/gpu_check.sh", "dry_run": a.dry_run == "1", "seconds": a.seconds, "env": env,
                    "cuda_libraries": lines(os.path.join(w, "cuda_libs.txt")),
                    "torch": load(os.path.join(w, "torch_env.json")),
                    "io_uring": next((ln for ln in uring if "uring" in ln and ("fall back" in ln or "unavailable" in ln)),
                                     "works" if uring else "not checked")},
        "steps": steps, "tests": tests,
        "synthetic": {"stoker": synthetic, "torch": torch_doc},
        "loader": loader_rows(w, [(t, int(rc) if rc.lstrip("-").isdigit() else rc, args[0] if args else "")
                                  for t, rc, *args in runs], idle),
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print_tables(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
