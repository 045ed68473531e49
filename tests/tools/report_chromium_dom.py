# SPDX-License-Identifier: Apache-2.0
# Checks the DOM that headless Chromium built from a rendered study report against the study
# result it came from: every chart present with one panel per group and the right number
# of series per panel (computed from the JSON, not hard-coded), and no external resource
# referenced by the HTML source. Used by report_chromium_test.sh; exits 1 with the reasons.
import html
import json
import re
import sys
from html.parser import HTMLParser

study_path, dom_path, html_path = sys.argv[1:4]
study = json.load(open(study_path))
dom = open(dom_path, encoding="utf-8").read()
source = open(html_path, encoding="utf-8").read()
errors = []


class Charts(HTMLParser):
    """Collects each <svg data-chart> with the data-series of the <g>s inside it."""

    def __init__(self):
        super().__init__()
        self.charts, self.current, self.depth, self.banners = [], None, 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.depth += 1
            if "data-chart" in a:
                self.current = dict(chart=a["data-chart"], panel=a.get("data-panel"), series=[],
                                    depth=self.depth)
                self.charts.append(self.current)
        if tag == "g" and self.current is not None and "data-series" in a:
            self.current["series"].append(a["data-series"])
        if "data-state" in a:
            self.banners.append(a["data-state"])

    def handle_endtag(self, tag):
        if tag == "svg":
            if self.current is not None and self.current["depth"] == self.depth:
                self.current = None
            self.depth -= 1


p = Charts()
p.feed(dom)


def ok(c):
    return c.get("status", "ok") == "ok" and isinstance(c.get("wall_s"), (int, float)) and c["wall_s"] > 0


def kind(c):
    return c.get("reader_kind") or c["reader"].split(":")[0]


cells = [c for c in study.get("results", []) if ok(c)]


def expect(chart, panels):
    """panels: {panel name: expected series count}."""
    got = {c["panel"]: c["series"] for c in p.charts if c["chart"] == chart}
    if set(got) != set(panels):
        errors.append(f"{chart}: panels {sorted(got)} but the study has {sorted(panels)}")
        return
    for name, n in panels.items():
        if len(set(got[name])) != n or len(got[name]) != n:
            errors.append(f"{chart} panel '{name}': {len(got[name])} series {got[name]}, expected {n}")


iters = {}
for c in cells:
    iters.setdefault(f"{c['storage']} {c['consumer']}", set()).add((c["dataset"], kind(c)))
expect("steps-vs-readers", {k: len(v) for k, v in iters.items()})
bw = {}
for c in cells:
    if isinstance(c.get("read_mb_per_s"), (int, float)):
        bw.setdefault(c["dataset"], set()).add(c["reader"])
expect("bandwidth", {k: len(v) for k, v in bw.items()})
expect("step-breakdown", {f"{c['dataset']} {c['consumer']}": 4 for c in cells if c.get("step_s")})

# The trace excerpt: the serial cell of the largest resolution and the fastest parallel cell
# on its storage and consumer, a slow and a fast step each.
traced = [c for c in cells if c.get("trace")]
traces = [c for c in p.charts if c["chart"] == "trace"]
if traced:
    res = max(c.get("resolution", 0) for c in traced)
    at = [c for c in traced if c.get("resolution", 0) == res]
    anchor = next((c for c in at if kind(c) == "serial"), at[0])
    rivals = [c for c in at if kind(c) != "serial" and c is not anchor and
              c["storage"] == anchor["storage"] and c["consumer"] == anchor["consumer"]]
    chosen = [anchor] + ([max(rivals, key=lambda c: c.get("images_per_s", 0))] if rivals else [])
    want = {}
    for c in chosen:
        for which in ("slow", "fast"):
            step = c["trace"].get(which)
            if step:
                name = f"{c['dataset']} {c['storage']} {c['consumer']} {c['reader']} {which}"
                want[name] = 2 + len({s["stage"] for s in step.get("samples", [])})  # + wait, compute
    expect("trace", want)
elif traces:
    errors.append(f"{len(traces)} trace charts but no cell has a trace")

state = study.get("context", {}).get("state")
if state in ("interrupted", "running") and state not in p.banners:
    errors.append(f"the study is {state} but the page shows no such banner (banners: {p.banners})")
if state == "complete" and ("interrupted" in p.banners or "running" in p.banners):
    errors.append("a complete study shows an interrupted/running banner")
failed = [c for c in study.get("results", []) if c.get("status", "ok") != "ok"]
for c in failed:
    if c.get("error") and c["error"] not in html.unescape(dom):
        errors.append(f"failed cell's reason not shown: {c.get('error')}")

# Self-contained: nothing fetched from anywhere.
for pattern in (r"""\b(src|href)\s*=\s*["']?\s*(https?:)?//""", r"@import", r"url\(\s*['\"]?\s*(https?:)?//",
                r"<link\b", r"<iframe\b", r"<img\b[^>]*src=\s*['\"]?(?!data:)"):
    m = re.search(pattern, source, re.I)
    if m:
        errors.append(f"external resource referenced: {source[max(0, m.start() - 40):m.end() + 40]!r}")

counts = {}
for c in p.charts:
    counts[c["chart"]] = counts.get(c["chart"], 0) + 1
print(f"charts: {counts}; banners: {p.banners}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
