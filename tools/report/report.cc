// SPDX-License-Identifier: Apache-2.0
// The study report's page: banner, conclusions, the four charts (charts.cc), the table of
// cells, the failed cells with their reasons, and the context (machine, libraries,
// datasets). One self-contained HTML document: inline CSS and SVG, a few lines of inline
// script for sorting the table (the page is complete without it), nothing fetched.
#include "tools/report/report.h"

#include <fmt/format.h>

#include <cmath>

#include "tools/report/charts.h"
#include "tools/report/study_json.h"
#include "tools/report/svg.h"

namespace stoker {

using report::esc;
using report::Json;
using report::num;
using report::num_or;
using report::obj;
using report::str;

namespace {

constexpr const char* kStyle = R"(
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1a1a1a;background:#fff;margin:0 auto;padding:16px 24px;max-width:1400px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:14px 0 4px}
.sub{color:#555;margin:0 0 12px}
.banner{border:2px solid #D55E00;background:#fff3e8;padding:10px 14px;margin:12px 0;font-weight:600}
.banner.running{border-color:#0072B2;background:#eef6fc}
.summary{display:flex;flex-wrap:wrap;gap:8px 24px;margin:8px 0}.summary div b{display:block;font-size:20px}
ul.conclusions li{margin:4px 0}
.answer{border:2px solid #0072B2;background:#eef6fc;padding:4px 14px;margin:12px 0}.answer h2{border:0;margin:6px 0 2px}.answer li{margin:4px 0}
figure.chart{margin:8px 0 16px}figcaption,.note{color:#555;font-size:13px;margin:4px 0}
.panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:12px}.trace-cell .panels{grid-template-columns:repeat(auto-fill,minmax(480px,1fr))}
.panel svg{width:100%;max-width:600px;height:auto;display:block}.legend-strip{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px;margin:4px 0 8px}.legend-strip .key{display:inline-flex;align-items:center;gap:5px}
svg text{font-size:11px;fill:#333}svg .panel-title{font-size:13px;font-weight:600;fill:#111}svg .title{font-size:11.5px;fill:#444}
svg .axis line,svg .axis-line{stroke:#666;stroke-width:1}svg .axis line.grid{stroke:#e6e6e6}
svg .window{fill:#0072B2;fill-opacity:.07;stroke:#0072B2;stroke-opacity:.4;stroke-dasharray:3 3}
table{border-collapse:collapse;margin:6px 0 12px;font-size:12.5px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}#cells td{white-space:nowrap}
th{background:#f4f4f4;position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer}.wrap{overflow-x:auto}
tr.failed td{background:#fff3e8}code{font-size:12px;word-break:break-all}.empty{color:#777;font-style:italic}
@media print{body{max-width:none;padding:0}.panel{break-inside:avoid}h2{break-after:avoid}th{position:static}}
)";

// Sort a table by the clicked column (numbers numerically); the page reads fine without it.
constexpr const char* kScript = R"(
document.querySelectorAll('table.sortable th').forEach(function(th,i){th.addEventListener('click',function(){
var t=th.closest('table'),b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),asc=th.dataset.asc!=='1';
rows.sort(function(x,y){var a=x.cells[i].dataset.v||x.cells[i].textContent,c=y.cells[i].dataset.v||y.cells[i].textContent;
var p=parseFloat(a),q=parseFloat(c);var r=(!isNaN(p)&&!isNaN(q))?p-q:a.localeCompare(c);return asc?r:-r;});
rows.forEach(function(r){b.appendChild(r);});th.dataset.asc=asc?'1':'0';});});
)";

std::string pct(const Json& c, const char* key) {
  const auto v = num(c, key);
  return v ? fmt::format("{:.0f}%", 100 * *v) : "";
}

// The cell's run-to-run spread (report::spread) as a percentage; blank for a single run.
std::string spread_pct(const Json& c) {
  const auto s = report::spread(c);
  if (!s) return "";
  return 100 * *s < 10 ? fmt::format("{:.1f}%", 100 * *s) : fmt::format("{:.0f}%", 100 * *s);
}

std::string number(const Json& c, const char* key) {
  const auto v = num(c, key);
  return v ? report::short_num(*v) : "";
}

std::string bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string td(const std::string& text, bool numeric = false) {
  return fmt::format("<td{}>{}</td>", numeric ? R"( class="n")" : "", esc(text));
}

std::string banner(const Json& ctx, size_t finished, size_t failed) {
  const std::string state = str(ctx, "state");
  const auto planned = num(ctx, "planned_cells");
  const std::string of = planned ? fmt::format(" of {} planned", *planned) : "";
  std::string html;
  if (state == "interrupted")
    html += fmt::format(
        R"(<div class="banner" data-state="interrupted">This study was interrupted: {} cell{}{} finished. Everything below covers the finished cells only.</div>)",
        finished, finished == 1 ? "" : "s", of);
  else if (state == "running")
    html += fmt::format(
        R"(<div class="banner running" data-state="running">This study is still running: {} cell{}{} finished so far; the page is rewritten after every cell.</div>)",
        finished, finished == 1 ? "" : "s", of);
  if (failed > 0)
    html += fmt::format(
        R"(<div class="banner" data-state="failed-cells">{} cell{} failed: see <a href="#failed">the failed cells and their reasons</a>.</div>)",
        failed, failed == 1 ? "" : "s");
  return html;
}

std::string cells_table(const std::vector<const Json*>& cs) {
  static const char* const heads[] = {
      "dataset",     "storage",     "consumer",      "reader",         "status",         "time (s)",
      "spread",      "images/s",    "read MB/s",     "data wait",      "utilisation",    "gaps",
      "bound",       "read ms/img", "decode ms/img", "augment ms/img", "collate ms/img", "cores",
      "wait p50 ms", "wait p90 ms", "wait p99 ms"};
  std::string html = R"(<div class="wrap"><table class="sortable" id="cells"><thead><tr>)";
  for (const char* h : heads) html += fmt::format("<th>{}</th>", h);
  html += "</tr></thead><tbody>";
  for (const Json* c : cs) {
    const Json& cpu = obj(*c, "cpu_ms_per_image");
    const Json& wait = obj(*c, "wait_ms");
    const bool failed = str(*c, "status", "ok") != "ok";
    html += failed ? R"(<tr class="failed">)" : "<tr>";
    html += td(str(*c, "dataset")) + td(str(*c, "storage")) + td(str(*c, "consumer")) +
            td(str(*c, "reader")) + td(str(*c, "status", "ok")) + td(number(*c, "wall_s"), true) +
            td(spread_pct(*c), true) + td(number(*c, "images_per_s"), true) +
            td(number(*c, "read_mb_per_s"), true) + td(pct(*c, "data_wait_share"), true) +
            td(pct(*c, "accelerator_utilisation"), true) + td(pct(*c, "gap_share"), true) +
            td(str(*c, "bound")) + td(number(cpu, "read"), true) + td(number(cpu, "decode"), true) +
            td(number(cpu, "augment"), true) + td(number(cpu, "collate"), true) +
            td(number(*c, "cores_used"), true) + td(number(wait, "p50"), true) +
            td(number(wait, "p90"), true) + td(number(wait, "p99"), true);
    html += "</tr>\n";
  }
  return html + "</tbody></table></div>";
}

std::string failed_table(const std::vector<const Json*>& failed) {
  if (failed.empty()) return R"(<p class="empty">No cell failed.</p>)";
  std::string html =
      R"(<table id="failed-cells"><thead><tr><th>dataset</th><th>storage</th><th>consumer</th><th>reader</th><th>reason</th></tr></thead><tbody>)";
  for (const Json* c : failed)
    html += "<tr>" + td(str(*c, "dataset")) + td(str(*c, "storage")) + td(str(*c, "consumer")) +
            td(str(*c, "reader")) + td(str(*c, "error", "no reason recorded")) + "</tr>\n";
  return html + "</tbody></table>";
}

// Scalar context fields as a two-column table; the nested ones get tables of their own.
std::string context_section(const Json& ctx) {
  std::string html = "<h3>Machine and run</h3><table><tbody>";
  for (const auto& [k, v] : ctx.items()) {
    if (v.is_object() || v.is_array()) continue;
    std::string text = v.is_string() ? v.get<std::string>() : v.is_null() ? "none" : v.dump();
    if (k == "memory_bytes" && v.is_number()) text = bytes(v.get<double>());
    if (k == "elapsed_s" && v.is_number()) text = fmt::format("{:.1f} s", v.get<double>());
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(k),
                        k == "command" ? "<code>" + esc(text) + "</code>" : esc(text));
  }
  html += "</tbody></table>";
  const Json& libs = obj(ctx, "libraries");
  if (!libs.empty()) {
    html += "<h3>Libraries</h3><table><tbody>";
    for (const auto& [k, v] : libs.items())
      html += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(k),
                          esc(v.is_string() ? v.get<std::string>() : v.dump()));
    html += "</tbody></table>";
  }
  const Json& datasets = report::arr(ctx, "datasets");
  if (!datasets.empty()) {
    html +=
        R"(<h3>Datasets</h3><table id="datasets"><thead><tr><th>name</th><th>root</th><th>resolution</th><th>images</th><th>classes</th><th>total</th><th>mean file</th><th>smallest</th><th>largest</th></tr></thead><tbody>)";
    for (const auto& d : datasets) {
      auto b = [&](const char* key) {
        const auto v = num(d, key);
        return v ? bytes(*v) : std::string();
      };
      html += "<tr>" + td(str(d, "name")) + td(str(d, "root")) + td(number(d, "resolution"), true) +
              td(number(d, "images"), true) + td(number(d, "classes"), true) +
              td(b("bytes"), true) + td(b("mean_bytes"), true) + td(b("min_bytes"), true) +
              td(b("max_bytes"), true) + "</tr>";
    }
    html += "</tbody></table>";
  }
  const Json& storages = report::arr(ctx, "storages");
  if (!storages.empty()) {
    html +=
        "<h3>Storages</h3><table><thead><tr><th>name</th><th>kind</th><th>detail</th></tr></"
        "thead><tbody>";
    for (const auto& s : storages)
      html += "<tr>" + td(str(s, "name")) + td(str(s, "kind")) + td(str(s, "detail")) + "</tr>";
    html += "</tbody></table>";
  }
  const Json& consumers = report::arr(ctx, "consumers");
  if (!consumers.empty()) {
    html +=
        "<h3>Consumers</h3><table><thead><tr><th>name</th><th>kind</th><th>detail</th></tr></"
        "thead><tbody>";
    for (const auto& c : consumers) {
      std::string detail;
      if (const auto ips = num(c, "images_per_s"))
        detail = fmt::format("emulates {} images/s", report::short_num(*ips));
      else if (!str(c, "arch").empty())
        detail = "trains " + str(c, "arch");
      html += "<tr>" + td(str(c, "name")) + td(str(c, "kind")) + td(detail) + "</tr>";
    }
    html += "</tbody></table>";
  }
  return html;
}

}  // namespace

std::string report_page_head(const std::string& title) {
  return fmt::format(
      R"(<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{}</title><style>{}</style></head><body>)",
      esc(title), kStyle);
}

std::string render_report(const nlohmann::json& study) {
  const Json& ctx = obj(study, "context");
  const auto all = report::cells(study);
  std::vector<const Json*> failed;
  size_t good = 0;
  for (const Json* c : all) {
    if (str(*c, "status", "ok") != "ok")
      failed.push_back(c);
    else if (report::ok(*c))
      ++good;
  }
  const std::string title =
      fmt::format("stoker study{}", str(ctx, "date").empty() ? "" : ", " + str(ctx, "date"));
  std::string html = report_page_head(title);
  html += fmt::format(
      R"(<h1>Stoker study</h1><p class="sub">{}{}{}</p>)", esc(str(ctx, "cpu", "unknown machine")),
      num(ctx, "online_cpus") ? fmt::format(", {} cores", str(ctx, "online_cpus")) : "",
      str(ctx, "date").empty() ? "" : " \u00b7 " + esc(str(ctx, "date")));
  html += banner(ctx, all.size(), failed.size());
  // The answer first: what a reader came for, before any detail.
  html += R"(<section class="answer" id="answer"><h2>The answer</h2><ul>)";
  for (const auto& s : answer(study)) {
    const auto colon = s.find(": ");
    html +=
        colon == std::string::npos || colon > 60
            ? "<li>" + esc(s) + "</li>"
            : "<li><b>" + esc(s.substr(0, colon)) + "</b>: " + esc(s.substr(colon + 2)) + "</li>";
  }
  html += "</ul></section>";
  html += R"(<div class="summary">)";
  html += fmt::format("<div><b>{}</b>cells finished</div>", all.size());
  if (const auto p = num(ctx, "planned_cells"))
    html += fmt::format("<div><b>{}</b>planned</div>", *p);
  html += fmt::format("<div><b>{}</b>ok</div><div><b>{}</b>failed</div>", good, failed.size());
  if (const auto it = num(ctx, "steps"))
    html += fmt::format("<div><b>{}</b>timed steps of batch {}</div>", *it, str(ctx, "batch", "?"));
  if (const auto e = num(ctx, "elapsed_s"))
    html += fmt::format("<div><b>{:.0f} s</b>elapsed</div>", *e);
  html += "</div>";

  html += R"(<h2 id="conclusions">Conclusions</h2><ul class="conclusions">)";
  // The part before the first ": " names the cells a sentence is about: bold, to scan by.
  for (const auto& s : conclusions(study)) {
    const auto colon = s.find(": ");
    html +=
        colon == std::string::npos || colon > 120
            ? "<li>" + esc(s) + "</li>"
            : "<li><b>" + esc(s.substr(0, colon)) + "</b>: " + esc(s.substr(colon + 2)) + "</li>";
  }
  html += "</ul>";
  html += R"(<h2 id="steps">Time for the timed steps against reader count</h2>)" +
          report::steps_chart(study);
  html += R"(<h2 id="bandwidth">Read bandwidth per storage</h2>)" + report::bandwidth_chart(study);
  html += R"(<h2 id="breakdown">Step time breakdown</h2>)" + report::breakdown_chart(study) +
          report::per_size_table(study);
  html +=
      R"(<h2 id="trace">Trace excerpt: a slow and a fast step</h2>)" + report::trace_excerpt(study);
  html +=
      R"(<h2 id="cells-table">All cells</h2><p class="note">Click a column heading to sort.</p>)" +
      cells_table(all);
  html += R"(<h2 id="failed">Failed cells</h2>)" + failed_table(failed);
  html += R"(<h2 id="context">Context</h2>)" + context_section(ctx);
  html += fmt::format("<script>{}</script></body></html>\n", kScript);
  return html;
}

}  // namespace stoker
