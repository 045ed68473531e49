// SPDX-License-Identifier: Apache-2.0
// `stoker qualify`'s report: the answer in words, the chart of accelerators fed against
// resolution (one line per storage and mode: solid real decode, dashed read only), the read
// MB/s of each storage, where each limit is, the links as measured, every step of every
// search, and the context. A pure function of qualify.json (docs/FORMATS.md), tolerant of
// a partial result (study_json.h's reads), the same style as the study's report.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tools/report/report.h"
#include "tools/report/study_json.h"
#include "tools/report/svg.h"

namespace stoker {

using report::arr;
using report::esc;
using report::Json;
using report::num;
using report::num_or;
using report::obj;
using report::str;

namespace {

// The finished searches (status ok), in result order.
std::vector<const Json*> answered(const Json& q) {
  std::vector<const Json*> out;
  for (const Json& e : arr(q, "results"))
    if (str(e, "status") == "ok") out.push_back(&e);
  return out;
}

std::string bound_words(const std::string& bound) {
  if (bound == "link") return "the link";
  if (bound == "server") return "the NFS server's CPU";
  if (bound == "decode") return "the client's CPU, decoding";
  if (bound == "cpu") return "the client's CPU, reading";
  if (bound == "latency") return "the storage's answer time for the requests in flight";
  if (bound == "max") return "the largest N tried";
  return bound;
}

std::string count_text(const Json& e) {
  return (str(e, "bound") == "max" ? "at least " : "") + str(e, "accelerators");
}

// One line per storage and mode: N and its limit at each resolution, and the cores one
// accelerator needs there.
std::vector<std::string> answer_lines(const Json& q) {
  std::vector<std::string> out;
  for (const Json* e : answered(q)) {
    std::string line =
        fmt::format("{} px, {}, {}: {} ({}, {})", str(*e, "resolution", "?"), str(*e, "storage"),
                    str(*e, "mode") == "read" ? "read only" : "real decode", count_text(*e),
                    bound_words(str(*e, "bound")), str(*e, "bound_detail"));
    if (const auto c = num(*e, "cores_per_accelerator"))
      line += fmt::format("; one accelerator needs {} cores", report::short_num(*c));
    out.push_back(line);
  }
  if (out.empty()) out.push_back("No search has finished yet.");
  return out;
}

// The answer at a glance: storage and mode down, resolution across, N in each cell.
std::string answer_table(const Json& q) {
  std::vector<std::string> rows, cols;
  std::map<std::pair<std::string, std::string>, std::string> cell;
  for (const Json* e : answered(q)) {
    const std::string row =
        str(*e, "storage") + (str(*e, "mode") == "read" ? ", read only" : ", real decode");
    const std::string col = str(*e, "resolution", "?") + " px";
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    if (std::find(cols.begin(), cols.end(), col) == cols.end()) cols.push_back(col);
    cell[{row, col}] = fmt::format("<b>{}</b> <span class=\"note\">{}</span>", esc(count_text(*e)),
                                   esc(str(*e, "bound")));
  }
  if (rows.empty()) return "";
  std::string html = "<table><thead><tr><th>storage, mode</th>";
  for (const std::string& c : cols) html += "<th>" + esc(c) + "</th>";
  html += "</tr></thead><tbody>";
  for (const std::string& r : rows) {
    html += "<tr><td>" + esc(r) + "</td>";
    for (const std::string& c : cols) {
      auto it = cell.find({r, c});
      html += "<td class=\"n\">" + (it == cell.end() ? std::string("-") : it->second) + "</td>";
    }
    html += "</tr>";
  }
  return html + "</tbody></table>";
}

// Accelerators fed (y) against resolution (x), one line per storage and mode.
std::string fed_chart(const Json& q) {
  const auto es = answered(q);
  std::map<std::string, std::vector<std::pair<double, double>>> lines;
  std::vector<std::string> order;
  double xmax = 0, ymax = 1;
  for (const Json* e : es) {
    const auto res = num(*e, "resolution");
    if (!res) continue;
    const std::string key = str(*e, "storage") + " " + str(*e, "mode");
    if (!lines.count(key)) order.push_back(key);
    lines[key].push_back({*res, num_or(*e, "accelerators", 0)});
    xmax = std::max(xmax, *res);
    ymax = std::max(ymax, num_or(*e, "accelerators", 0));
  }
  if (order.empty()) return R"(<p class="empty">No dataset with a resolution in its name.</p>)";
  const double W = 720, H = 340, L = 56, R = 250, T = 16, B = 44;
  const auto xt = report::nice_ticks(0, xmax), yt = report::nice_ticks(0, ymax);
  const report::Scale x{xt.front(), xt.back(), L, W - R}, y{yt.front(), yt.back(), H - B, T};
  std::string svg = fmt::format(
      R"(<svg viewBox="0 0 {} {}" style="max-width:760px" role="img" aria-label="accelerators fed against resolution">)",
      W, H);
  report::x_axis(svg, x, xt, H - B, T, "resolution (px)");
  report::y_axis(svg, y, yt, L, W - R, "accelerators fed (AU >= 90% each)");
  std::map<std::string, size_t> storage_colour;
  for (size_t k = 0; k < order.size(); ++k) {
    auto& pts = lines[order[k]];
    std::sort(pts.begin(), pts.end());
    const std::string storage = order[k].substr(0, order[k].rfind(' '));
    const bool read = order[k].ends_with(" read");
    const size_t c = storage_colour.emplace(storage, storage_colour.size()).first->second;
    std::string path;
    for (const auto& [px, n] : pts)
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", x(px), y(n));
    svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>)",
                       path, report::palette(c), read ? R"( stroke-dasharray="6 4")" : "");
    for (const auto& [px, n] : pts)
      svg += report::marker(read ? "square" : "circle", x(px), y(n), 4, report::palette(c));
    const double ly = T + 14 + 16 * double(k);
    svg += fmt::format(
        R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"{}/><text x="{}" y="{}">{}</text>)",
        W - R + 12, ly - 4, W - R + 36, ly - 4, report::palette(c),
        read ? R"( stroke-dasharray="6 4")" : "", W - R + 42, ly,
        esc(storage + (read ? ", read only" : ", real decode")));
  }
  return R"(<figure class="chart"><div class="panel">)" + svg +
         R"(</svg></div><figcaption>Solid: real decode (the RandomResizedCrop pipeline). Dashed: )"
         R"(read only (MLPerf Storage's setting). The gap between them is what decoding costs in )"
         R"(accelerators.</figcaption></figure>)";
}

// The read MB/s of each storage and resolution: at the largest N that held (else N = 1).
std::string bandwidth_table(const Json& q) {
  std::string rows;
  for (const Json* e : answered(q)) {
    const Json* best = nullptr;
    for (const Json& st : arr(*e, "steps"))
      if (best == nullptr || (st.value("held", false) &&
                              num_or(st, "accelerators", 0) > num_or(*best, "accelerators", 0)))
        best = &st;
    if (best == nullptr) continue;
    rows += fmt::format(
        R"(<tr><td>{}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{:.1f}</td><td class="n">{:.0f}</td><td class="n">{:.2f}</td><td class="n">{:.2f}</td></tr>)",
        esc(str(*e, "resolution")), esc(str(*e, "storage")), esc(str(*e, "mode")),
        str(*best, "accelerators"), num_or(*best, "read_mb_per_s", 0),
        num_or(*best, "images_per_s", 0), num_or(*best, "loader_cores_busy", 0),
        num_or(*best, "server_cores_busy", 0));
  }
  return R"(<table><thead><tr><th>px</th><th>storage</th><th>mode</th><th>N</th><th>read MB/s</th><th>img/s</th><th>loader cores</th><th>server cores</th></tr></thead><tbody>)" +
         rows +
         R"(</tbody></table><p class="note">At the largest N that held (or N = 1 where none did): the storage's read rate the fleet drew, with the cores it kept busy.</p>)";
}

std::string links_table(const Json& q) {
  std::string rows;
  std::map<std::string, bool> seen;
  for (const Json& e : arr(q, "results")) {
    const Json& l = obj(e, "link");
    if (l.empty() || seen[str(e, "storage")]) continue;
    seen[str(e, "storage")] = true;
    rows += fmt::format(
        R"(<tr><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{:.0f}</td></tr>)",
        esc(str(e, "storage")), esc(str(l, "shaping")), str(l, "rtt_ms_avg"), str(l, "rtt_ms_max"),
        num_or(l, "bandwidth_bits_per_s", 0) / 1e6);
  }
  if (rows.empty()) return R"(<p class="empty">No NFS link in a namespace of its own.</p>)";
  return R"(<table><thead><tr><th>storage</th><th>shaping</th><th>RTT avg ms</th><th>RTT max ms</th><th>Mbit/s (iperf3)</th></tr></thead><tbody>)" +
         rows + "</tbody></table>";
}

std::string steps_table(const Json& q) {
  std::string rows;
  for (const Json& e : arr(q, "results")) {
    const std::string head =
        fmt::format("<td>{}</td><td>{}</td><td>{}</td>", esc(str(e, "dataset")),
                    esc(str(e, "storage")), esc(str(e, "mode")));
    if (str(e, "status") == "failed")
      rows += R"(<tr class="failed">)" + head + R"(<td colspan="8">failed: )" +
              esc(str(e, "error")) + "</td></tr>";
    for (const Json& st : arr(e, "steps")) {
      std::string spread;
      for (const Json& a : arr(obj(st, "runs"), "au_min"))
        if (a.is_number())
          spread += fmt::format("{}{:.0f}", spread.empty() ? "" : " ", 100 * a.get<double>());
      rows += fmt::format(
          R"(<tr>{}<td class="n">{}</td><td>{}</td><td class="n">{:.0f}</td><td class="n">{:.1f}</td><td class="n">{:.0f}</td><td class="n">{}</td><td class="n">{:.2f}</td><td>{}</td></tr>)",
          head, str(st, "accelerators"), st.value("held", false) ? "yes" : "no",
          num_or(st, "images_per_s", 0), num_or(st, "read_mb_per_s", 0),
          100 * num_or(st, "au_min", 0), spread,
          num_or(st, "loader_cores_busy", 0) + num_or(st, "server_cores_busy", 0),
          esc(str(st, "bound")) +
              (st.contains("not_enough_data") ? " (" + esc(str(st, "not_enough_data")) + ")" : ""));
    }
  }
  return R"(<div class="wrap"><table class="sortable"><thead><tr><th>dataset</th><th>storage</th><th>mode</th><th>N</th><th>held</th><th>img/s</th><th>MB/s</th><th>least AU %</th><th>runs' least AU %</th><th>cores busy</th><th>bound</th></tr></thead><tbody>)" +
         rows + "</tbody></table></div>";
}

std::string context_list(const Json& ctx) {
  const Json& acc = obj(ctx, "accelerator");
  std::string html = "<ul>";
  html += fmt::format("<li>command: <code>{}</code></li>", esc(str(ctx, "command")));
  html += fmt::format("<li>accelerator: {} ({} img/s, from {}){}</li>", esc(str(acc, "name")),
                      report::short_num(num_or(acc, "images_per_s", 0)), esc(str(acc, "from")),
                      str(acc, "note").empty() ? "" : "; " + esc(str(acc, "note")));
  html += fmt::format(
      "<li>each step: {} s per accelerator at its full rate, median of {} runs; reader {} per "
      "accelerator, batch {}, prefetch {}</li>",
      str(ctx, "seconds"), str(ctx, "repeats"), esc(str(ctx, "reader")), str(ctx, "batch"),
      str(ctx, "prefetch"));
  const Json& load = obj(ctx, "machine_load");
  if (const auto b = num(load, "machine_cores_busy"))
    html += fmt::format(
        "<li>machine: {}, {} cores; {} cores busy on average, {} of them others' work</li>",
        esc(str(ctx, "cpu")), str(ctx, "online_cpus"), report::short_num(*b),
        report::short_num(num_or(load, "other_cores_busy", 0)));
  for (const Json& d : arr(ctx, "datasets"))
    html += fmt::format("<li>dataset {}: {} images, {} px, mean {} KB (<code>{}</code>)</li>",
                        esc(str(d, "name")), str(d, "images"), str(d, "resolution", "?"),
                        report::short_num(num_or(d, "mean_bytes", 0) / 1e3), esc(str(d, "root")));
  return html + "</ul>";
}

}  // namespace

std::vector<std::string> qualify_answer(const nlohmann::json& q) {
  return answer_lines(q);
}

std::string render_qualify_report(const nlohmann::json& q) {
  const Json& ctx = obj(q, "context");
  const std::string title =
      fmt::format("stoker qualify{}", str(ctx, "date").empty() ? "" : ", " + str(ctx, "date"));
  std::string html = report_page_head(title);
  html +=
      fmt::format(R"(<h1>Stoker qualification</h1><p class="sub">{}{}{}</p>)",
                  esc(str(ctx, "cpu", "unknown machine")),
                  num(ctx, "online_cpus") ? fmt::format(", {} cores", str(ctx, "online_cpus")) : "",
                  str(ctx, "date").empty() ? "" : " \u00b7 " + esc(str(ctx, "date")));
  if (str(ctx, "status") != "complete")
    html += fmt::format(
        R"(<div class="banner{}">This result is {}: the searches below are those finished.</div>)",
        str(ctx, "status") == "running" ? " running" : "", esc(str(ctx, "status", "partial")));
  const Json& acc = obj(ctx, "accelerator");
  html += fmt::format(
      R"(<section class="answer" id="answer"><h2>The answer: accelerators fed at AU &ge; 90% each</h2><p>Each accelerator: {}, {} img/s. The limit each N met is named under it.</p>)",
      esc(str(acc, "name")), report::short_num(num_or(acc, "images_per_s", 0)));
  html += answer_table(q) +
          "<details><summary>In words, with the cores one accelerator needs</summary><ul>";
  for (const std::string& s : answer_lines(q)) {
    const auto colon = s.find(": ");
    html += colon == std::string::npos ? "<li>" + esc(s) + "</li>"
                                       : "<li><b>" + esc(s.substr(0, colon)) +
                                             "</b>: " + esc(s.substr(colon + 2)) + "</li>";
  }
  html += "</ul></details></section>";
  html += R"(<h2 id="fed">Accelerators fed against resolution</h2>)" + fed_chart(q);
  html += R"(<h2 id="bandwidth">Read bandwidth</h2>)" + bandwidth_table(q);
  html += R"(<h2 id="links">Links</h2>)" + links_table(q);
  html += R"(<h2 id="steps">Every step of the search</h2>)" + steps_table(q);
  html += R"(<h2 id="context">Context</h2>)" + context_list(ctx);
  return html + "</body></html>\n";
}

}  // namespace stoker
