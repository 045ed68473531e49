// SPDX-License-Identifier: Apache-2.0
// The report's charts as inline SVG: see charts.h.
#include "tools/report/charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tools/report/svg.h"

namespace stoker::report {

namespace {

std::vector<const Json*> ok_cells(const Json& study) {
  std::vector<const Json*> out;
  for (const Json* c : cells(study))
    if (ok(*c)) out.push_back(c);
  return out;
}

std::vector<const Json*> where(const std::vector<const Json*>& cs, const char* key,
                               const std::string& value) {
  std::vector<const Json*> out;
  for (const Json* c : cs)
    if (str(*c, key) == value) out.push_back(c);
  return out;
}

size_t index_of(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

const char* kind_marker(const std::string& kind) {
  if (kind == "serial") return "square";
  if (kind == "processes") return "circle";
  if (kind == "threads") return "triangle";
  if (kind == "uring") return "diamond";
  return "cross";
}

// Readers of several kinds share a thread count (serial and processes:1, threads:2 and
// processes:2): a small sideways shift per kind keeps their markers apart.
double kind_offset(const std::string& kind) {
  if (kind == "serial") return -0.12;
  if (kind == "threads") return 0.08;
  if (kind == "uring") return 0.16;
  if (kind == "processes") return 0;
  return -0.06;
}

std::string svg_open(const char* chart, const std::string& panel, double w, double h) {
  return fmt::format(
      R"(<svg data-chart="{}" data-panel="{}" viewBox="0 0 {:.0f} {:.0f}" width="{:.0f}" height="{:.0f}" role="img" xmlns="http://www.w3.org/2000/svg">)",
      chart, esc(panel), w, h, w, h);
}

std::string panel_title(const std::string& text, double x) {
  return fmt::format(R"(<text class="panel-title" x="{:.0f}" y="16">{}</text>)", x, esc(text));
}

std::string empty_figure(const char* what) {
  return fmt::format(R"(<p class="empty">No finished cell has {} yet.</p>)", what);
}

std::string pct(double share) {
  return fmt::format("{:.0f}%", 100 * share);
}

// The legend above a figure's panels, shared by all of them: HTML, so it wraps and keeps
// its text size on a narrow screen, with each key's marker as a small SVG.
std::string legend_strip(const std::vector<LegendItem>& items) {
  std::string html = R"(<div class="legend-strip">)";
  for (const auto& it : items)
    html += fmt::format(
        R"(<span class="key"><svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">{}</svg>{}</span>)",
        marker(it.marker, 6, 6, 5, it.colour), esc(it.label));
  return html + "</div>";
}

}  // namespace

std::string steps_chart(const Json& study) {
  const auto cs = ok_cells(study);
  if (cs.empty()) return empty_figure("a wall time");
  const auto datasets = distinct(cs, "dataset");
  std::vector<std::string> kinds;
  double max_threads = 1;
  for (const Json* c : cs) {
    const std::string k = reader_kind(*c);
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    max_threads = std::max(max_threads, reader_threads(*c));
  }
  const double steps = num_or(obj(study, "context"), "steps", num_or(*cs.front(), "steps", 0));
  const std::string y_title = steps > 0
                                  ? fmt::format("time for {} timed steps (s)", short_num(steps))
                                  : std::string("time for the timed steps (s)");

  std::vector<LegendItem> items;
  for (size_t i = 0; i < datasets.size(); ++i) items.push_back({datasets[i], palette(i), "rect"});
  for (const auto& k : kinds) items.push_back({k, "#555555", kind_marker(k)});
  std::string html = R"(<figure class="chart">)" + legend_strip(items) + R"(<div class="panels">)";

  // Panels in sweep order of (storage, consumer).
  std::vector<std::pair<std::string, std::string>> panels;
  for (const Json* c : cs) {
    const auto key = std::make_pair(str(*c, "storage"), str(*c, "consumer"));
    if (std::find(panels.begin(), panels.end(), key) == panels.end()) panels.push_back(key);
  }
  constexpr double W = 420, H = 290, L = 56, R = 12, T = 28, B = 44;
  for (const auto& [storage, consumer] : panels) {
    const auto pc = where(where(cs, "storage", storage), "consumer", consumer);
    double ymax = 0;
    for (const Json* c : pc) ymax = std::max(ymax, num_or(*c, "wall_s", 0));
    // The accelerator's own rate as a time: the timed steps' images at its rate, the floor
    // a fed accelerator reaches (emulated consumers, whose rate the context gives).
    double floor_s = 0, rate = 0;
    for (const auto& k : arr(obj(study, "context"), "consumers"))
      if (str(k, "name") == consumer) rate = num_or(k, "images_per_s", 0);
    const double batch = num_or(obj(study, "context"), "batch", num_or(*pc.front(), "batch", 0));
    if (rate > 0 && steps > 0 && batch > 0) floor_s = steps * batch / rate;
    ymax = std::max(ymax, floor_s);
    const auto yt = nice_ticks(0, ymax * 1.05);
    const Scale y{0, yt.back(), H - B, T};
    const Scale x{0.5, max_threads + 0.5, L, W - R};
    std::vector<double> xt;
    if (max_threads <= 8)
      for (int i = 1; i <= static_cast<int>(max_threads); ++i) xt.push_back(i);
    else
      xt = nice_ticks(1, max_threads);
    const std::string panel = storage + " " + consumer;
    std::string svg = svg_open("steps-vs-readers", panel, W, H);
    svg += panel_title(storage + " \u00b7 " + consumer, L);
    y_axis(svg, y, yt, L, W - R, y_title);
    x_axis(svg, x, xt, H - B, T, "readers (threads; processes:N: N; uring: decode threads)");
    if (floor_s > 0)
      svg += fmt::format(
          R"(<g data-line="accelerator"><line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#009E73" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{:.1f}" y="{:.1f}" text-anchor="end" style="fill:#00704f">accelerator alone: {} s ({} img/s)</text></g>)",
          L, y(floor_s), W - R, y(floor_s), W - R - 2, y(floor_s) - 4, short_num(floor_s),
          short_num(rate));
    for (size_t d = 0; d < datasets.size(); ++d) {
      for (const auto& kind : kinds) {
        std::vector<const Json*> pts;
        for (const Json* c : where(pc, "dataset", datasets[d]))
          if (reader_kind(*c) == kind) pts.push_back(c);
        if (pts.empty()) continue;
        std::sort(pts.begin(), pts.end(), [](const Json* a, const Json* b) {
          return reader_threads(*a) < reader_threads(*b);
        });
        const char* colour = palette(d);
        svg += fmt::format(R"(<g data-series="{} {}">)", esc(datasets[d]), esc(kind));
        if (pts.size() > 1) {
          std::string path;
          for (const Json* c : pts)
            path +=
                fmt::format("{}{:.1f} {:.1f}", path.empty() ? "M" : "L",
                            x(reader_threads(*c) + kind_offset(kind)), y(num_or(*c, "wall_s", 0)));
          svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"{}/>)", path,
                             colour, kind == "processes" ? "" : R"( stroke-dasharray="5 3")");
        }
        for (const Json* c : pts) {
          const double px = x(reader_threads(*c) + kind_offset(kind));
          const double py = y(num_or(*c, "wall_s", 0));
          svg += fmt::format(
              R"(<g class="pt"><title>{} {}: {} s ({} images/s, data wait {})</title>)",
              esc(datasets[d]), esc(str(*c, "reader")), short_num(num_or(*c, "wall_s", 0)),
              short_num(num_or(*c, "images_per_s", 0)), pct(num_or(*c, "data_wait_share", 0)));
          svg += marker(kind_marker(kind), px, py, 4.5, colour);
          svg += "</g>";
        }
        svg += "</g>";
      }
    }
    svg += "</svg>";
    html += R"(<div class="panel">)" + svg + "</div>";
  }
  html += fmt::format(
      R"(</div><figcaption>Time for the timed steps against the number of reader threads, one panel per storage and consumer. Lower is better. Colour: dataset; marker: reader kind (serial is the square at 1; dashed lines join readers other than processes). The green dashed line is the accelerator's own rate: the time a fed accelerator takes; a point on it is fed, the height above it is time spent waiting for data.</figcaption></figure>)");
  return html;
}

std::string bandwidth_chart(const Json& study) {
  std::vector<const Json*> cs;
  for (const Json* c : ok_cells(study))
    if (num(*c, "read_mb_per_s")) cs.push_back(c);
  if (cs.empty()) return empty_figure("a read bandwidth");
  const auto readers = distinct(cs, "reader");
  const auto storages = distinct(cs, "storage");
  std::vector<LegendItem> items;
  for (size_t i = 0; i < readers.size(); ++i) items.push_back({readers[i], palette(i), "rect"});
  std::string html = R"(<figure class="chart">)" + legend_strip(items) + R"(<div class="panels">)";
  constexpr double W = 420, H = 280, L = 56, R = 12, T = 28, B = 44;
  for (const auto& dataset : distinct(cs, "dataset")) {
    const auto dc = where(cs, "dataset", dataset);
    // The most each (storage, reader) delivered over the consumers: a slow consumer
    // caps the rate it asks for, the fastest one shows what the storage can give.
    std::map<std::pair<size_t, size_t>, double> best;
    double ymax = 0;
    for (const Json* c : dc) {
      const auto key = std::make_pair(index_of(storages, str(*c, "storage")),
                                      index_of(readers, str(*c, "reader")));
      best[key] = std::max(best[key], num_or(*c, "read_mb_per_s", 0));
      ymax = std::max(ymax, best[key]);
    }
    const auto yt = nice_ticks(0, ymax * 1.05);
    const Scale y{0, yt.back(), H - B, T};
    std::vector<size_t> present_storages, present_readers;
    for (const auto& [k, v] : best) {
      if (std::find(present_storages.begin(), present_storages.end(), k.first) ==
          present_storages.end())
        present_storages.push_back(k.first);
      if (std::find(present_readers.begin(), present_readers.end(), k.second) ==
          present_readers.end())
        present_readers.push_back(k.second);
    }
    std::sort(present_storages.begin(), present_storages.end());
    std::sort(present_readers.begin(), present_readers.end());
    const double group_w = (W - L - R) / static_cast<double>(present_storages.size());
    const double bar_w = (group_w - 10) / static_cast<double>(present_readers.size());
    std::string svg = svg_open("bandwidth", dataset, W, H);
    svg += panel_title(dataset, L);
    y_axis(svg, y, yt, L, W - R, "read MB/s (best over consumers)");
    svg += fmt::format(R"(<line class="axis-line" x1="{}" y1="{}" x2="{}" y2="{}"/>)", L, H - B,
                       W - R, H - B);
    for (size_t g = 0; g < present_storages.size(); ++g)
      svg +=
          fmt::format(R"(<text class="cat" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)",
                      L + (static_cast<double>(g) + 0.5) * group_w, H - B + 16,
                      esc(storages[present_storages[g]]));
    svg += fmt::format(
        R"(<text class="title" x="{:.1f}" y="{:.1f}" text-anchor="middle">storage</text>)",
        (L + W - R) / 2, H - B + 34);
    for (size_t r = 0; r < present_readers.size(); ++r) {
      const size_t ri = present_readers[r];
      svg += fmt::format(R"(<g data-series="{}" fill="{}">)", esc(readers[ri]), palette(ri));
      for (size_t g = 0; g < present_storages.size(); ++g) {
        const auto it = best.find({present_storages[g], ri});
        if (it == best.end()) continue;
        const double x0 = L + static_cast<double>(g) * group_w + 5 + static_cast<double>(r) * bar_w;
        svg += fmt::format(
            R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{} {} {}: {} MB/s</title></rect>)",
            x0, y(it->second), std::max(1.0, bar_w - 1), std::max(0.0, y(0) - y(it->second)),
            esc(dataset), esc(storages[present_storages[g]]), esc(readers[ri]),
            short_num(it->second));
      }
      svg += "</g>";
    }
    svg += "</svg>";
    html += R"(<div class="panel">)" + svg + "</div>";
  }
  html +=
      R"(</div><figcaption>Read bandwidth (file bytes read per second of the timed steps), one panel per dataset, a group of bars per storage, one bar per reader; the best over the consumers. Higher is better, but it can only be as high as the consumer asks.</figcaption></figure>)";
  return html;
}

std::string breakdown_chart(const Json& study) {
  static const char* const parts[] = {"wait", "stage", "compute", "gap"};
  std::vector<const Json*> cs;
  for (const Json* c : ok_cells(study))
    if (!obj(*c, "step_s").empty()) cs.push_back(c);
  if (cs.empty()) return empty_figure("a step-time breakdown");
  std::vector<LegendItem> items;
  for (const char* p : parts) items.push_back({p, stage_colour(p), "rect"});
  std::string html = R"(<figure class="chart">)" + legend_strip(items) + R"(<div class="panels">)";
  for (const auto& dataset : distinct(cs, "dataset")) {
    const auto dc = where(cs, "dataset", dataset);
    for (const auto& consumer : distinct(dc, "consumer")) {
      const auto pc = where(dc, "consumer", consumer);
      constexpr double W = 420, L = 150, R = 14, T = 30, B = 44, row = 15;
      const double H = T + B + row * static_cast<double>(pc.size());
      double xmax = 0;
      for (const Json* c : pc) {
        double sum = 0;
        for (const char* p : parts) sum += num_or(obj(*c, "step_s"), p, 0);
        xmax = std::max(xmax, sum);
      }
      const auto xt = nice_ticks(0, xmax * 1.02, 4);
      const Scale x{0, xt.back(), L, W - R};
      const std::string panel = dataset + " " + consumer;
      std::string svg = svg_open("step-breakdown", panel, W, H);
      svg += panel_title(dataset + " \u00b7 " + consumer, 8);
      x_axis(svg, x, xt, H - B, T, "time in the timed steps (s)");
      for (size_t i = 0; i < pc.size(); ++i)
        svg += fmt::format(
            R"(<text class="cat" x="{:.1f}" y="{:.1f}" text-anchor="end">{} &#183; {}</text>)",
            L - 4, T + row * (static_cast<double>(i) + 0.5) + 4, esc(str(*pc[i], "storage")),
            esc(str(*pc[i], "reader")));
      std::vector<double> offset(pc.size(), 0);
      for (const char* p : parts) {
        svg += fmt::format(R"(<g data-series="{}" fill="{}">)", p, stage_colour(p));
        for (size_t i = 0; i < pc.size(); ++i) {
          const double v = std::max(0.0, num_or(obj(*pc[i], "step_s"), p, 0));
          if (v > 0)
            svg += fmt::format(
                R"(<rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.1f}"><title>{} {} {}: {} s</title></rect>)",
                x(offset[i]), T + row * static_cast<double>(i) + 2, x(offset[i] + v) - x(offset[i]),
                row - 4, esc(str(*pc[i], "storage")), esc(str(*pc[i], "reader")), p, short_num(v));
          offset[i] += v;
        }
        svg += "</g>";
      }
      svg += "</svg>";
      html += R"(<div class="panel">)" + svg + "</div>";
    }
  }
  html +=
      R"(</div><figcaption>Where the timed steps went, one bar per cell: waiting for the batch, staging it on the device (the copy in and any conversion), computing, and engine gaps not already counted as wait. One panel per dataset and consumer.</figcaption></figure>)";
  return html;
}

std::string per_size_table(const Json& study) {
  std::string rows;
  for (const Json* c : ok_cells(study)) {
    const Json& sizes = arr(*c, "per_size");
    if (sizes.size() < 2) continue;  // one size: the breakdown above says it all
    for (const auto& z : sizes) {
      const Json& ms = obj(z, "step_ms");
      rows += fmt::format(
          "<tr><td>{} &#183; {} &#183; {} &#183; {}</td><td>{}x{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
          esc(str(*c, "dataset")), esc(str(*c, "storage")), esc(str(*c, "consumer")),
          esc(str(*c, "reader")), short_num(num_or(z, "height", 0)),
          short_num(num_or(z, "width", 0)), short_num(num_or(z, "steps", 0)),
          short_num(num_or(ms, "total", 0)), short_num(num_or(ms, "wait", 0)),
          short_num(num_or(ms, "stage", 0)), short_num(num_or(ms, "compute", 0)),
          short_num(num_or(ms, "gap", 0)));
    }
  }
  if (rows.empty()) return "";
  return R"(<figure class="chart"><table class="per-size"><tr><th>cell</th><th>size</th>)"
         R"(<th>steps</th><th>step ms</th><th>wait ms</th><th>stage ms</th><th>compute ms</th>)"
         R"(<th>gap ms</th></tr>)" +
         rows +
         R"(</table><figcaption>The cost per resolution of cells whose size changed over the timed steps (--size-schedule): mean milliseconds per step at each size.</figcaption></figure>)";
}

namespace {

bool has_trace(const Json& c) {
  const Json& t = obj(c, "trace");
  return !arr(obj(t, "slow"), "samples").empty() || !arr(obj(t, "fast"), "samples").empty();
}

std::string cell_label(const Json& c) {
  return fmt::format("{} {} {} {}", str(c, "dataset"), str(c, "storage"), str(c, "consumer"),
                     str(c, "reader"));
}

// One step of one cell: a lane for the consumer (wait, compute) and one per loader thread.
std::string trace_panel(const Json& cell, const Json& step, const char* which, double t0,
                        double t1) {
  // A sample's "worker" (docs/FORMATS.md, the study's trace) is its loader thread's ordinal.
  std::vector<double> thread_ids;
  for (const auto& s : arr(step, "samples"))
    if (const auto w = num(s, "worker"))
      if (std::find(thread_ids.begin(), thread_ids.end(), *w) == thread_ids.end())
        thread_ids.push_back(*w);
  std::sort(thread_ids.begin(), thread_ids.end());
  constexpr double W = 520, L = 78, R = 12, T = 30, B = 44, lane = 22;
  const double H = T + B + lane * static_cast<double>(thread_ids.size() + 1);
  const auto xt = nice_ticks(t0, t1, 5);
  const Scale x{t0, t1, L, W - R};
  std::string svg = svg_open("trace", cell_label(cell) + " " + which, W, H);
  svg.insert(svg.size() - 1, fmt::format(R"( data-step="{}")", which));
  const double begin = num_or(step, "begin_ms", 0), end = num_or(step, "end_ms", begin);
  const double wait = num_or(step, "wait_ms", 0), compute = num_or(step, "compute_ms", 0);
  svg += panel_title(
      fmt::format("{} step {}: {} ms (wait {} ms, compute {} ms)", which, str(step, "step", "?"),
                  short_num(end - begin), short_num(wait), short_num(compute)),
      8);
  x_axis(svg, x, xt, H - B, T, "ms relative to the step's start");
  // The step window, shaded across all lanes so the threads' spans read against it.
  svg +=
      fmt::format(R"(<rect class="window" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/>)",
                  x(begin), T, std::max(0.0, x(end) - x(begin)), H - B - T);
  svg += fmt::format(R"(<text class="cat" x="{:.1f}" y="{:.1f}" text-anchor="end">consumer</text>)",
                     L - 4, T + lane / 2 + 4);
  svg += fmt::format(
      R"(<g data-series="wait" fill="{}"><rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.1f}"><title>wait {} ms</title></rect></g>)",
      stage_colour("wait"), x(begin), T + 3, std::max(0.5, x(begin + wait) - x(begin)), lane - 6,
      short_num(wait));
  svg += fmt::format(
      R"(<g data-series="compute" fill="{}"><rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.1f}"><title>compute {} ms</title></rect></g>)",
      stage_colour("compute"), x(end - compute), T + 3, std::max(0.5, x(end) - x(end - compute)),
      lane - 6, short_num(compute));
  for (size_t i = 0; i < thread_ids.size(); ++i)
    svg +=
        fmt::format(R"(<text class="cat" x="{:.1f}" y="{:.1f}" text-anchor="end">thread {}</text>)",
                    L - 4, T + lane * (static_cast<double>(i) + 1.5) + 4, short_num(thread_ids[i]));
  std::map<std::string, std::string> by_stage;
  std::vector<std::string> stages;
  for (const auto& s : arr(step, "samples")) {
    const auto w = num(s, "worker");
    const auto b = num(s, "begin_ms"), e = num(s, "end_ms");
    if (!w || !b || !e) continue;
    const std::string stage = str(s, "stage", "other");
    if (!by_stage.count(stage)) stages.push_back(stage);
    const double li = static_cast<double>(std::find(thread_ids.begin(), thread_ids.end(), *w) -
                                          thread_ids.begin());
    by_stage[stage] += fmt::format(
        R"(<rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.1f}"><title>thread {} {} {} ms</title></rect>)",
        x(std::max(t0, *b)), T + lane * (li + 1) + 3,
        std::max(0.4, x(std::min(t1, *e)) - x(std::max(t0, *b))), lane - 6, short_num(*w),
        esc(stage), short_num(*e - *b));
  }
  for (const auto& stage : stages)
    svg += fmt::format(R"(<g data-series="{}" fill="{}">{}</g>)", esc(stage), stage_colour(stage),
                       by_stage[stage]);
  svg += "</svg>";
  return svg;
}

// Which loader threads had a span inside the step's window: the question the excerpt answers.
std::string busy_threads(const Json& step) {
  const double begin = num_or(step, "begin_ms", 0), end = num_or(step, "end_ms", begin);
  std::set<double> all, busy;
  for (const auto& s : arr(step, "samples")) {
    const auto w = num(s, "worker");
    if (!w) continue;
    all.insert(*w);
    if (num_or(s, "end_ms", -1e300) > begin && num_or(s, "begin_ms", 1e300) < end) busy.insert(*w);
  }
  std::string list;
  for (const double w : busy) list += (list.empty() ? "" : ", ") + short_num(w);
  return fmt::format("{} of {} loader threads busy during the step{}{}", busy.size(), all.size(),
                     busy.empty() ? "" : ": ", list);
}

std::string trace_row(const Json& cell) {
  const Json& t = obj(cell, "trace");
  double t0 = 0, t1 = 1;
  bool first = true;
  for (const char* which : {"slow", "fast"}) {
    const Json& s = obj(t, which);
    if (s.empty()) continue;
    auto take = [&](double v) {
      if (first) t0 = t1 = v, first = false;
      t0 = std::min(t0, v);
      t1 = std::max(t1, v);
    };
    take(num_or(s, "begin_ms", 0));
    take(num_or(s, "end_ms", 0));
    for (const auto& sp : arr(s, "samples")) {
      if (const auto b = num(sp, "begin_ms")) take(*b);
      if (const auto e = num(sp, "end_ms")) take(*e);
    }
  }
  if (t1 <= t0) t1 = t0 + 1;
  std::string html = fmt::format(
      R"(<div class="trace-cell"><h3>{} &middot; {} &middot; {} &middot; {}</h3><p class="note">{} s for the timed steps, data wait {}, bound: {}.</p><div class="panels">)",
      esc(str(cell, "dataset")), esc(str(cell, "storage")), esc(str(cell, "consumer")),
      esc(str(cell, "reader")), short_num(num_or(cell, "wall_s", 0)),
      pct(num_or(cell, "data_wait_share", 0)), esc(str(cell, "bound", "unknown")));
  for (const char* which : {"slow", "fast"}) {
    const Json& s = obj(t, which);
    if (s.empty()) continue;
    html += R"(<div class="panel wide">)" + trace_panel(cell, s, which, t0, t1) +
            fmt::format(R"(<p class="note">{}</p></div>)", busy_threads(s));
  }
  return html + "</div></div>";
}

}  // namespace

std::string trace_excerpt(const Json& study) {
  std::vector<const Json*> cs;
  for (const Json* c : ok_cells(study))
    if (has_trace(*c)) cs.push_back(c);
  if (cs.empty()) return empty_figure("a trace excerpt");
  // The largest resolution shows the loader at its hardest; its serial cell is the
  // baseline, and the fastest parallel cell on the same storage and consumer the answer.
  double res = -1;
  for (const Json* c : cs) res = std::max(res, num_or(*c, "resolution", 0));
  std::vector<const Json*> at_res;
  for (const Json* c : cs)
    if (num_or(*c, "resolution", 0) == res) at_res.push_back(c);
  const Json* serial = nullptr;
  for (const Json* c : at_res)
    if (reader_kind(*c) == "serial") {
      serial = c;
      break;
    }
  const Json* anchor = serial ? serial : at_res.front();
  const Json* best = nullptr;
  for (const Json* c : at_res) {
    if (c == anchor || reader_kind(*c) == "serial") continue;
    if (str(*c, "storage") != str(*anchor, "storage") ||
        str(*c, "consumer") != str(*anchor, "consumer"))
      continue;
    if (!best || num_or(*c, "images_per_s", 0) > num_or(*best, "images_per_s", 0)) best = c;
  }
  std::vector<LegendItem> items;
  for (const char* p : {"wait", "compute", "read", "decode", "augment", "collate"})
    items.push_back({p, stage_colour(p), "rect"});
  std::string html = R"(<figure class="chart">)" + legend_strip(items) + trace_row(*anchor);
  if (best) html += trace_row(*best);
  html +=
      R"(<figcaption>The slowest and the fastest timed step of each cell, on one time axis. The top lane is the consumer (waiting for the batch, then computing); below, a lane per loader thread with the stage spans of the samples in the batch consumed at that step (negative times: produced before the step began). The shaded band is the step.</figcaption></figure>)";
  return html;
}

}  // namespace stoker::report
