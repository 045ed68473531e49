#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Gathers scripts/gpu_check.sh's work folder into one JSON document and prints its tables.

Reads what the steps left (steps.tsv, runs.tsv, check.tsv, env.txt, gtest JSON, `stoker train
--json`, torch_gpu_bench.py's JSON, `stoker bench --json`, nvidia-smi memory samples) and
writes {context, plan, steps, tests, synthetic, loader, runs}. A missing or broken file is
recorded as such: a failed step never hides the others. A Stoker rate the GPU's peak cannot
reach (images/s x FLOP per image above the peak for its precision) is marked implausible and
never chosen as the fastest mode or the rate to feed. Standard library only.
  gpu_check_summary.py --work DIR --out FILE [--dry-run 0|1] [--seconds N] [--limit N] [--quiet]
  gpu_check_summary.py --work DIR --fastest   (the fastest plausible synthetic mode's name)
  gpu_check_summary.py --work DIR --rate      (img/s of the fastest trainer: Stoker or PyTorch)
"""
import argparse
import glob
import json
import os
import re
import sys

from fusion_choice import choose  # beside this script, in the repository and the bundle

# Dense tensor-core peaks, TFLOP/s, f16/bf16 (tf32 is half, f32 without tensor cores 1/14.7):
# H100 SXM and H200 989, H100 PCIe 756, A100 312. STOKER_PEAK_TFLOPS overrides.
PEAKS = [("H200", 989.0), ("H100 PCIe", 756.0), ("H100", 989.0), ("A100", 312.0)]
PRECISION_SHARE = {"f16": 1.0, "bf16": 1.0, "tf32": 0.5, "f32": 1 / 14.7}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_embedded(path):
    """A JSON document with other lines around it (a program's stdout and stderr together)."""
    text = "\n".join(lines(path))
    i, j = text.find("{"), text.rfind("}")
    try:
        return json.loads(text[i:j + 1]) if 0 <= i < j else None
    except ValueError:
        return None


def lines(path):
    try:
        with open(path) as f:
            return [ln.rstrip("\n") for ln in f]
    except OSError:
        return []


def tsv(path):
    return [ln.split("\t") for ln in lines(path) if ln]


def num(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def rnd(v, n=1):
    return None if v is None else round(v, n)


# Keys renamed in stoker's JSON (issue 44): {name: older name}. A run written before the
# rename still summarises: the older name is read where the new one is absent.
OLDER_NAMES = {"data_wait_share": "data_wait_fraction", "warmup": "timing_warmup",
               "accelerator_utilisation": "au"}


def field(d, key):
    """d[key], else d[its older name], else None."""
    return d[key] if key in d else d.get(OLDER_NAMES.get(key, key))


def result_of(doc):
    """The result and context of a {context, results:[one]} document."""
    if not doc or not doc.get("results"):
        return None, None
    return doc["results"][0], doc.get("context", {})


def smi_peak_mib(path, idle):
    vals = [float(v) for v in lines(path) if v.strip().replace(".", "", 1).isdigit()]
    return round(max(vals) - idle, 1) if vals else None


def peak_tflops(env):
    if os.environ.get("STOKER_PEAK_TFLOPS"):
        return float(os.environ["STOKER_PEAK_TFLOPS"])
    gpu = env.get("gpu", "")
    return next((p for name, p in PEAKS if name in gpu), None)


def gtest_counts(path):
    doc = load(path)
    if not doc:
        return {}
    c = {"tests": doc.get("tests", 0), "failures": doc.get("failures", 0), "disabled": doc.get("disabled", 0)}
    skipped, names = 0, []
    for suite in doc.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("result") == "SKIPPED":
                skipped += 1
            if t.get("failures"):
                names.append(f"{suite['name']}.{t['name']}")
    c.update(skipped=skipped, failed_names=names[:30])
    return c


def planted_of(w):
    """The planted error's verdict (gpu_check.sh step_planted): caught, not caught or not run."""
    rows = tsv(os.path.join(w, "planted.tsv"))
    if not rows or len(rows[0]) < 2:
        return None
    verdict, rc = rows[0][0], rows[0][1]
    return {"error": "STOKER_FE_PLANT=finalize_count", "verdict": verdict, "exit": int(rc),
            **gtest_counts(os.path.join(w, "gtest_planted.json"))}


def train_row(w, tag, run, idle, peak):
    """One `stoker train --json` run: steady-state figures, memory, plausibility."""
    r, ctx = result_of(load(os.path.join(w, f"{tag}.json")))
    row = {"run": tag, "exit": num(run[2]) if run else None, "seconds": round(int(run[3]) / 1000, 1) if run else None}
    if r is None:
        tail = lines(os.path.join(w, f"{tag}.out"))[-3:]
        row["error"] = " | ".join(tail) or "no output"
        return row
    warm = int(field(ctx, "warmup") or 0)
    gaps = r.get("gaps") or {}
    dm = r.get("device_memory") or {}
    # images_per_s is null when stoker refused the rate as a measurement error (above the
    # GPU's peak): rate_refused then says why (docs/FORMATS.md, rate_check).
    check = r.get("rate_check") or {}
    row.update(rate_refused=check.get("message") or None,
               engine_step_ms_median=(r.get("engine_step_ms") or {}).get("median"))
    row.update(precision=ctx.get("precision"), batch=ctx.get("batch"), images_per_s=rnd(r.get("images_per_s")),
               step_ms_median=rnd((r.get("step_ms") or {}).get("median"), 3),
               timed_steps=max(0, len(r.get("per_step") or []) - warm), warmup_steps=warm,
               interrupted=bool(r.get("interrupted")), flop_per_image=r.get("flop_per_image"),
               data_wait_share=rnd(field(r, "data_wait_share"), 4),
               kernel_gap_share=rnd(gaps["share"], 4) if "share" in gaps else None,
               device_memory_planned_mib=rnd(dm["planned_bytes"] / 2**20) if dm.get("planned_bytes") else None,
               device_memory_peak_mib=rnd(dm["peak_in_use_bytes"] / 2**20) if dm.get("peak_in_use_bytes") else None,
               nvidia_smi_peak_mib=smi_peak_mib(os.path.join(w, f"{tag}.mem"), idle),
               backend=ctx.get("backend"), decode=r.get("decode"),
               cpu_cores_busy=rnd(r.get("cpu_cores_busy"), 2), loss=(r.get("loss") or [None])[-1] if isinstance(r.get("loss"), list) else r.get("loss"))
    # Whatever the trainer says about host-side (enqueue) time, kept beside the GPU's figures.
    for k, v in r.items():
        if "enqueue" in k or k.startswith("host_"):
            row[k] = v
    if peak and row["images_per_s"] and row["flop_per_image"]:
        share = PRECISION_SHARE.get(row["precision"] or "", 1.0)
        tflops = row["images_per_s"] * row["flop_per_image"] / 1e12
        row["achieved_tflops"] = round(tflops, 1)
        row["plausible"] = tflops <= peak * share
        if not row["plausible"]:
            row["implausible"] = (f"{tflops:.0f} TFLOP/s is above the GPU's {peak * share:.0f} peak for "
                                  f"{row['precision']}: a measurement error, not a result")
    else:
        row["plausible"] = row["images_per_s"] is not None and row["images_per_s"] > 0
    return row


def runs_by_tag(w):
    return {r[1]: r for r in tsv(os.path.join(w, "runs.tsv")) if len(r) >= 5}


def synthetic_rows(w, runs, idle, peak):
    return [train_row(w, tag, run, idle, peak) for tag, run in runs.items() if tag.startswith("stoker_")]


def torch_doc(w, name):
    doc = load(os.path.join(w, f"{name}.json"))
    if doc is None:
        out = lines(os.path.join(w, f"{name}.out"))
        return {"error": " | ".join(out[-2:]) or f"{name}: not run"} if os.path.exists(os.path.join(w, f"{name}.out")) or out else None
    doc["nvidia_smi_peak_mib_whole_process"] = smi_peak_mib(os.path.join(w, f"{name}.mem"), 0.0)
    return doc


def comparison(stoker, torch_results):
    """Each Stoker mode against PyTorch's same precision and layout (eager, and compiled)."""
    by = {r["variant"]: r for r in torch_results if r.get("images_per_s")}
    rows = []
    for s in stoker:
        mode = s["run"][len("stoker_"):]
        if mode == "traced" or not s.get("images_per_s"):
            continue
        base = mode.replace("-graph", "").replace("-convstats", "").replace("-prologue", "")
        t, c = by.get(base), by.get(base + "-compile")
        row = {"mode": mode, "stoker_images_per_s": s["images_per_s"], "plausible": s.get("plausible"),
               "stoker_memory_mib": s.get("device_memory_peak_mib") or s.get("nvidia_smi_peak_mib")}
        if t:
            row.update(torch_variant=base, torch_images_per_s=t["images_per_s"],
                       ratio=round(s["images_per_s"] / t["images_per_s"], 3),
                       torch_peak_reserved_mib=t.get("peak_reserved_mib"),
                       torch_peak_allocated_mib=t.get("peak_allocated_mib"))
            if row["stoker_memory_mib"] and t.get("peak_reserved_mib"):
                row["memory_ratio_to_reserved"] = round(row["stoker_memory_mib"] / t["peak_reserved_mib"], 2)
        if c:
            row.update(torch_compile_images_per_s=c["images_per_s"],
                       ratio_to_compile=round(s["images_per_s"] / c["images_per_s"], 3))
        rows.append(row)
    return rows


def scaling_rows(w):
    """The loader alone, every reader at 1..16 workers (the scaling step): steady img/s, per
    worker, CPU use and per-stage ms per image (the profile of where a reader's time goes)."""
    rows = []
    paths = glob.glob(os.path.join(w, "scaling_*.json"))
    for path in sorted(paths, key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0)):
        doc = load(path) or {}
        for r in doc.get("results", []):
            reader = r.get("reader", "")
            # threads:N, processes:N: N workers; uring:QD:T: T decode threads (QD is reads).
            nums = re.findall(r":(\d+)", reader)
            workers = int(nums[-1]) if nums and not (reader.startswith("uring") and len(nums) < 2) else 1
            steady = r.get("steady") or {}
            rate = steady.get("images_per_s") or r.get("images_per_s")
            e = r.get("emulation") or {}
            rows.append({"size": os.path.basename(r.get("dataset", "")).rstrip("/") or path, "reader": reader,
                         "workers": workers, "images_per_s": rnd(rate), "steady": bool(steady),
                         "images_per_s_per_worker": rnd(rate / workers) if rate else None,
                         "cpu_cores_used": rnd(r.get("cpu_cores_used"), 2), "batches": r.get("batches"),
                         "stage_ms_per_image": {k: rnd(v, 3) for k, v in (r.get("stage_ms_per_image") or {}).items()},
                         "accelerator_utilisation": rnd(field(e, "accelerator_utilisation"), 4),
                         "meets_au_target": e.get("meets_target"),
                         "data_wait_share": rnd(e["data_wait_s"] / e["window_s"], 4) if e.get("window_s") else None,
                         "emulated_images_per_s": e.get("images_per_s")})
    return rows


def study_of(w):
    """The short study (the study step): its state and each cell's figures, GPU decode's cells
    beside the readers' (study.json: docs/FORMATS.md)."""
    doc = load(os.path.join(w, "study", "study.json"))
    if not doc:
        return None
    ctx = doc.get("context", {})
    cells = [{"resolution": c.get("resolution"), "reader": c.get("reader"), "consumer": c.get("consumer"),
              "status": c.get("status"), "images_per_s": rnd(c.get("images_per_s")),
              "data_wait_share": rnd(c.get("data_wait_share"), 4), "gap_share": rnd(c.get("gap_share"), 4),
              "cores_used": rnd(c.get("cores_used"), 2), "bound": c.get("bound"),
              "gpu_decode": c.get("gpu_decode"), "error": c.get("error")}
             for c in doc.get("results", [])]
    return {"state": ctx.get("state"), "planned_cells": ctx.get("planned_cells"),
            "finished_cells": ctx.get("finished_cells"), "elapsed_s": ctx.get("elapsed_s"), "cells": cells}


def context_of(w):
    env = dict(ln.split(" ", 1) for ln in lines(os.path.join(w, "env.txt")) if " " in ln)
    idle = env.get("gpu_idle_mib", "").strip()
    return env, float(idle) if idle.isdigit() else 0.0


def fastest(rows):
    # conv_stats and conv_prologue (--fusions, issue 45) are behind their option until a run
    # shows them right: the loader-fed steps use the default path. The b400 step's runs (-bN)
    # are at another batch.
    ok = [r for r in rows if r.get("exit") == 0 and r.get("plausible") and r.get("images_per_s")
          and r["run"] != "stoker_traced" and "convstats" not in r["run"]
          and "prologue" not in r["run"]
          and not re.search(r"-b\d+$", r["run"])]
    return max(ok, key=lambda r: r["images_per_s"]) if ok else None


def auto_of(w, row):
    """A `--reader auto` run (the auto step): the reader it chose, its searches' cost, and its
    last epoch's checksum (data_checksums: the epoch and rank 0's), kept for same_data()."""
    d = load(os.path.join(w, f"{row['run']}.json")) or {}
    r = {**(d.get("context") or {}), **((d.get("results") or [{}])[0] or {})}
    sums = r.get("data_checksums") or {}
    row["epoch_checksum"] = [sums.get("epoch"), (sums.get("ranks") or [None])[0]] if sums else None
    tuning = r.get("reader_tuning")
    if not tuning:
        return
    searches = tuning.get("searches") or []
    row.update(auto_chose=(tuning.get("chosen") or {}).get("reader"),
               auto_searches=len(searches),
               auto_search_steps=sum(s.get("steps", 0) for s in searches),
               auto_tried=[c.get("reader") + (f" prefetch {c.get('prefetch')}") for s in searches
                           for c in s.get("tried", [])])


def same_data(rows):
    """Each auto run's epoch checksum against a fixed reader's of the same epoch, size and decode
    (the auto step's threads:16 run of as many steps): equal, whatever reader ran (issue 43)."""
    for r in rows:
        if not r["reader"].endswith("-auto") or not r.get("epoch_checksum"):
            continue
        kind = r["reader"][:-len("auto")]
        fixed = [f for f in rows if f["size"] == r["size"] and f["reader"].startswith(kind)
                 and f is not r and f.get("epoch_checksum")
                 and f["epoch_checksum"][0] == r["epoch_checksum"][0]]
        if fixed:
            r["same_data_as"] = {f["reader"]: f["epoch_checksum"] == r["epoch_checksum"] for f in fixed}


def build(a):
    w = a.work
    env, idle = context_of(w)
    peak = peak_tflops(env)
    runs = runs_by_tag(w)
    stoker = synthetic_rows(w, runs, idle, peak)
    t_eager, t_comp = torch_doc(w, "torch"), torch_doc(w, "torch_compile")
    torch_results = [r for d in (t_eager, t_comp) if d for r in d.get("results", [])]
    best = fastest(stoker)
    planted = planted_of(w)
    torch_rates = [r["images_per_s"] for r in torch_results if r.get("images_per_s")]
    rates = ([best["images_per_s"]] if best else []) + torch_rates
    rate = max(rates) if rates else None
    loader = [train_row(w, tag, run, idle, peak) for tag, run in runs.items() if tag.startswith("loader_")]
    for r in loader:
        _, px, reader = r["run"].split("_", 2)
        r.update(size=int(px), reader=re.sub(r"(\D)(\d)", r"\1:\2", reader, count=1))
        auto_of(w, r)
    same_data(loader)
    budget = next((r for r in tsv(os.path.join(w, "check.tsv")) if r[0] == "budget"), None)
    checks = [{"step": r[0], "run": r[1], "verdict": r[2], "command": r[3], "ms": num(r[4]) if len(r) > 4 else None}
              for r in tsv(os.path.join(w, "check.tsv")) if r[0] != "budget" and len(r) >= 4]
    doc = {
        "context": {"tool": "scripts/gpu_check.sh", "dry_run": a.dry_run == "1", "seconds": a.seconds,
                    "limit_s": a.limit, "env": env, "peak_tflops_f16": peak,
                    "cuda_libraries": lines(os.path.join(w, "cuda_libs.txt")),
                    "torch": load(os.path.join(w, "torch_env.json")), "gpu_facts": load_embedded(os.path.join(w, "gpu_facts.json"))},
        "plan_check": None if not budget else {
            "budget_s": int(budget[1]), "reserve_s": int(budget[2]), "limit_s": int(budget[3]),
            "fits": int(budget[1]) + int(budget[2]) <= int(budget[3]),
            "commands": len(checks), "not_parsing": [c for c in checks if c["verdict"] != "ok"],
            "checked": checks},
        "steps": [{"step": s[0], "status": s[1], "seconds": int(s[2]), "budget_s": int(s[3]),
                   "note": s[4] if len(s) > 4 else ""} for s in tsv(os.path.join(w, "steps.tsv"))],
        "tests": {t: {"exit": int(rc), "skipped": rc == "77", **gtest_counts(os.path.join(w, f"gtest_{t}.json"))}
                  for t, rc in tsv(os.path.join(w, "tests.tsv"))},
        "planted": planted,
        "fusion_choice": choose(
            {r["run"][len("stoker_"):]: r["images_per_s"] for r in stoker
             if r.get("exit") == 0 and r.get("plausible") and r.get("images_per_s")},
            load(os.path.join(w, "gtest_backend_conformance_test.json")),
            planted["verdict"] if planted else None),
        "synthetic": {"stoker": stoker, "torch": t_eager, "torch_compile": t_comp,
                      "comparison": comparison(stoker, torch_results)},
        "fastest_mode": best["run"][len("stoker_"):] if best else None,
        "rate_to_feed": rate,
        "loader": {"train": loader, "scaling": scaling_rows(w)},
        "study": study_of(w),
        "runs": [{"step": r[0], "run": r[1], "exit": num(r[2]), "seconds": round(int(r[3]) / 1000, 1),
                  "command": r[4]} for r in runs.values()],
    }
    return doc


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def pct(v):
    return fmt(None if v is None else 100 * v)


def auto_note(r):
    if "auto_chose" not in r:
        return ""
    same = r.get("same_data_as") or {}
    data = "; same data as " + ", ".join(k for k, v in same.items() if v) if any(same.values()) else ""
    differs = [k for k, v in same.items() if not v]
    if differs:
        data += "; DATA DIFFERS from " + ", ".join(differs)
    return f"chose {r['auto_chose']} ({r.get('auto_search_steps')} search steps){data}"


def print_tables(doc):
    print("\nsynthetic ResNet: Stoker against PyTorch (img/s; memory MiB: Stoker's peak in use, torch's reserved)")
    print(f"  {'mode':18} {'stoker':>9} {'torch':>9} {'ratio':>6} {'compile':>8} {'st MiB':>8} {'tr MiB':>8}  note")
    for r in doc["synthetic"]["comparison"]:
        print(f"  {r['mode']:18} {fmt(r['stoker_images_per_s']):>9} {fmt(r.get('torch_images_per_s')):>9} "
              f"{fmt(r.get('ratio'), '{:.2f}'):>6} {fmt(r.get('torch_compile_images_per_s')):>8} "
              f"{fmt(r.get('stoker_memory_mib'), '{:.0f}'):>8} {fmt(r.get('torch_peak_reserved_mib'), '{:.0f}'):>8}"
              f"  {'' if r.get('plausible') else 'IMPLAUSIBLE'}")
    for r in doc["synthetic"]["stoker"]:
        if "error" in r:
            print(f"  {r['run'][len('stoker_'):]:18} {'-':>9}  {r['error'][:100]}")
    for d in (doc["synthetic"]["torch"], doc["synthetic"]["torch_compile"]):
        for r in (d or {}).get("results", []):
            if "error" in r:
                print(f"  torch {r['variant']:12} {r['error'][:100]}")
    for c in doc["fusion_choice"]:
        print(f"  {c['pattern']}: {c['reason']}")
    print(f"fastest Stoker mode: {doc['fastest_mode']}; rate to feed: {fmt(doc['rate_to_feed'])} img/s")
    print("loader-fed training, CPU decode against GPU decode (fastest mode, steady state)")
    print(f"  {'size':>5} {'decode-reader':18} {'img/s':>8} {'steps':>5} {'wait%':>6} {'gap%':>6} {'cores':>6}  note")
    for r in doc["loader"]["train"]:
        print(f"  {r['size']:>5} {r['reader']:18} {fmt(r.get('images_per_s')):>8} {fmt(r.get('timed_steps'), '{}'):>5} "
              f"{pct(r.get('data_wait_share')):>6} {pct(r.get('kernel_gap_share')):>6} "
              f"{fmt(r.get('cpu_cores_busy')):>6}  {r.get('error', '')[:80]}"
              f"{auto_note(r)}")
    print("the loader alone (img/s, per worker, cores used, ms per image: read decode augment collate)")
    for r in doc["loader"]["scaling"]:
        st = r.get("stage_ms_per_image") or {}
        print(f"  {r['size']:>7} {r['reader']:15} {fmt(r['images_per_s']):>8} {fmt(r['images_per_s_per_worker']):>8}/worker "
              f"{fmt(r.get('cpu_cores_used')):>5} cores  " +
              " ".join(fmt(st.get(k), '{:.3f}') for k in ("read", "decode", "augment", "collate")))
    st = doc["study"]
    if st:
        print(f"study ({st['state']}, {st['finished_cells']} of {st['planned_cells']} cells; report: study_report.html)")
        for c in st["cells"]:
            print(f"  {fmt(c['resolution'], '{}'):>5} {c['reader'] or '-':28} {fmt(c['images_per_s']):>8} img/s "
                  f"wait {pct(c['data_wait_share']):>5}% gap {pct(c['gap_share']):>5}%  {c['bound'] or ''}"
                  f"{(c['error'] or '')[:80]}")
    if doc["plan_check"]:
        p = doc["plan_check"]
        print(f"plan check: budgets {p['budget_s']}s + {p['reserve_s']}s <= {p['limit_s']}s: {p['fits']}; "
              f"{p['commands']} GPU commands, {len(p['not_parsing'])} not parsing")
    print("steps: " + ", ".join(f"{s['step']} {s['status']} {s['seconds']}/{s['budget_s']}s" for s in doc["steps"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", default="0")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--quiet", action="store_true", help="write the JSON, print no tables")
    ap.add_argument("--fastest", action="store_true", help="print the fastest plausible synthetic mode")
    ap.add_argument("--rate", action="store_true", help="print the fastest trainer's img/s")
    a = ap.parse_args()
    doc = build(a)
    if a.fastest:
        if not doc["fastest_mode"]:
            return 1
        print(doc["fastest_mode"])
        return 0
    if a.rate:
        if not doc["rate_to_feed"]:
            return 1
        print(f"{doc['rate_to_feed']:.0f}")
        return 0
    if not a.out:
        ap.error("--out is needed")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)
    if not a.quiet:
        print_tables(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
