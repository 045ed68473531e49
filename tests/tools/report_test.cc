// SPDX-License-Identifier: Apache-2.0
// The study report on crafted results: each conclusion sentence from numbers chosen so the
// right answer is known (where readers stop paying, serial vs parallel, storage ratios,
// shard recovery, gaps, the bounding stage), HTML escaping, the banner of an interrupted
// study, failed cells, and results with fields missing, mistyped, or no cells at all.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "tools/report/report.h"
#include "tools/report/study_json.h"

namespace stoker {
namespace {

using nlohmann::json;

json cell(const std::string& reader, double wall, double wait, const std::string& storage = "local",
          const std::string& dataset = "256px", const std::string& consumer = "emulated:x") {
  const auto colon = reader.find(':');
  return {{"dataset", dataset},
          {"resolution", 256},
          {"storage", storage},
          {"consumer", consumer},
          {"reader", reader},
          {"reader_kind", reader.substr(0, colon)},
          {"threads", colon == std::string::npos ? 1 : std::stoi(reader.substr(colon + 1))},
          {"status", "ok"},
          {"steps", 10},
          {"wall_s", wall},
          {"images_per_s", 320 / wall},
          {"read_mb_per_s", 10 / wall},
          {"data_wait_share", wait},
          {"step_s",
           {{"wait", wall * wait}, {"stage", 0.0}, {"compute", wall * (1 - wait)}, {"gap", 0.0}}},
          {"bound", wait < 0.1 ? "compute" : "decode"}};
}

json study(std::vector<json> cells, const std::string& state = "complete") {
  return {{"context", {{"state", state}, {"online_cpus", 2}, {"steps", 10}}},
          {"results", std::move(cells)}};
}

std::string all_text(const std::vector<std::string>& sentences) {
  std::string s;
  for (const auto& x : sentences) s += x + "\n";
  return s;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(ReportConclusions, MoreReadersStopHelpingAtTheRightCount) {
  // 4 readers are within 5% of the best (8), 2 are not: the answer is 4.
  const auto text = all_text(conclusions(
      study({cell("serial", 10, 0.8), cell("processes:1", 8, 0.7), cell("processes:2", 4, 0.4),
             cell("processes:4", 2.08, 0.1), cell("processes:8", 2.0, 0.05)})));
  EXPECT_NE(text.find("processes stops improving at 4 readers"), std::string::npos) << text;
  // The same sweep where 8 still pays: no "stops", and the gain over 4 is stated.
  const auto more =
      all_text(conclusions(study({cell("processes:2", 4, 0.4), cell("processes:4", 2.6, 0.2),
                                  cell("processes:8", 2.0, 0.05)})));
  EXPECT_EQ(more.find("stops improving"), std::string::npos) << more;
  EXPECT_NE(more.find("processes still improves at 8 readers (1.3x faster than processes:4)"),
            std::string::npos)
      << more;
}

TEST(ReportConclusions, SerialAgainstTheBestParallelReader) {
  const auto text = all_text(conclusions(study(
      {cell("serial", 3.1, 0.63), cell("processes:4", 1.0, 0.04), cell("threads:2", 1.5, 0.2)})));
  EXPECT_NE(
      text.find("the serial reader waits 63% of the time; processes:4 cuts it to 4% (3.1x faster)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("fastest: processes:4 (1.0 s, 320 images/s): the consumer is the bottleneck "
                      "(data wait 4%)"),
            std::string::npos)
      << text;
}

TEST(ReportConclusions, NoParallelReaderHelping) {
  const auto text =
      all_text(conclusions(study({cell("serial", 1.0, 0.32), cell("threads:2", 1.02, 0.31)})));
  EXPECT_NE(text.find("no parallel reader beats serial by more than 5%"), std::string::npos)
      << text;
}

TEST(ReportConclusions, ComputeBoundCellsCreditNoReader) {
  // Issue 26's study: both wait 1%, yet serial took 2.3x as long (three noisy steps). The
  // reader cannot have made that difference: no speed-up is credited to it.
  const auto text =
      all_text(conclusions(study({cell("serial", 2.3, 0.01), cell("processes:2", 1.0, 0.01),
                                  cell("processes:4", 1.2, 0.01)})));
  EXPECT_NE(text.find("the reader does not matter here: the consumer is the bottleneck (serial "
                      "waits 1%, processes:2 waits 1%)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("faster"), std::string::npos) << text;
  EXPECT_EQ(text.find("stops improving"), std::string::npos) << text;
}

// A cell repeated: wall_s the median, wall_s_runs every run.
json repeated(json c, std::vector<double> runs) {
  c["wall_s_runs"] = runs;
  return c;
}

TEST(ReportConclusions, DifferencesWithinTheSpreadAreNotCalled) {
  // 1.2x apart, but each cell's runs spread over more than that: not a difference.
  const auto noisy =
      all_text(conclusions(study({repeated(cell("serial", 1.2, 0.5), {1.0, 1.2, 1.5}),
                                  repeated(cell("threads:2", 1.0, 0.3), {0.9, 1.0, 1.3})})));
  // Issue 47: noise larger than the effect is not a finding ("beats serial by no more than").
  EXPECT_NE(noisy.find("serial against parallel readers: can't tell at this spread (42%"),
            std::string::npos)
      << noisy;
  EXPECT_EQ(noisy.find("no parallel reader beats serial"), std::string::npos) << noisy;
  EXPECT_NE(noisy.find("3 runs per cell, spread up to 42%"), std::string::npos) << noisy;
  // Tight runs: the difference is real and said.
  const auto tight =
      all_text(conclusions(study({repeated(cell("serial", 1.5, 0.5), {1.49, 1.5, 1.51}),
                                  repeated(cell("threads:2", 1.0, 0.3), {0.99, 1.0, 1.0})})));
  EXPECT_NE(tight.find("threads:2 cuts it to 30% (1.5x faster)"), std::string::npos) << tight;
  EXPECT_NE(tight.find("3 runs per cell, spread up to 1%"), std::string::npos) << tight;
  // Storage: 10% slower, within a 20% spread: "as fast as".
  const auto st =
      all_text(conclusions(study({repeated(cell("serial", 1.0, 0.5), {0.9, 1.0, 1.1}),
                                  repeated(cell("serial", 1.1, 0.5, "nfs"), {1.0, 1.1, 1.2})})));
  EXPECT_NE(st.find("nfs against local: can't tell at this spread (10% apart, spread 20%)"),
            std::string::npos)
      << st;
  EXPECT_EQ(st.find("as fast as"), std::string::npos) << st;
  // Readers: 4 and 8 within a 60% spread: can't tell, not "more buy nothing".
  const auto sc =
      all_text(conclusions(study({repeated(cell("processes:1", 8, 0.7), {7.9, 8, 8.1}),
                                  repeated(cell("processes:4", 2.2, 0.1), {1.5, 2.2, 2.8}),
                                  repeated(cell("processes:8", 2.0, 0.05), {1.6, 2.0, 2.4})})));
  EXPECT_NE(sc.find("processes readers beyond 4: can't tell at this spread"), std::string::npos)
      << sc;
  EXPECT_EQ(sc.find("buy nothing"), std::string::npos) << sc;
}

TEST(ReportConclusions, ShardsAsFastAsTheBaseRecoverAllNotMore) {
  // Issue 47's contradiction: "as fast as local ... recovering 110% of what per-file nfs loses".
  const auto text = all_text(
      conclusions(study({cell("serial", 1.0, 0.5, "local"), cell("serial", 2.0, 0.8, "nfs"),
                         cell("serial", 0.9, 0.5, "nfs-shards")})));
  EXPECT_NE(text.find("recovering all of what per-file nfs loses"), std::string::npos) << text;
  EXPECT_EQ(text.find("110%"), std::string::npos) << text;
}

// An emulated consumer at 1000 images/s (batch 32, 10 steps: 0.32 s when fed).
json answer_study(std::vector<json> cells, double other_cores = 0.1) {
  json s = study(std::move(cells));
  s["context"]["batch"] = 32;
  s["context"]["consumers"] = {
      {{"name", "emulated:x"}, {"kind", "emulated"}, {"images_per_s", 1000}}};
  s["context"]["machine_load"] = {{"loadavg_start", {0.5, 0.4, 0.3}},
                                  {"loadavg_now", {1.5, 1.0, 0.5}},
                                  {"other_cores_busy", other_cores}};
  return s;
}

json decode_cell(const std::string& reader, double wall, double wait, double cores) {
  json c = cell(reader, wall, wait);
  c["cores_used"] = cores;
  return c;
}

TEST(ReportAnswer, BoundCoresPerAcceleratorAndReaders) {
  // serial: 320 img/s on 0.64 cores (2 CPU ms per image); processes:2 640 img/s: decode-bound.
  const auto a = answer(answer_study(
      {decode_cell("serial", 1.0, 0.6, 0.64), decode_cell("processes:2", 0.5, 0.4, 1.28)}));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0],
            "256px on local: bound by the decode CPU. Best reader processes:2: 640 images/s, 64% "
            "of the accelerator's 1000. One accelerator needs about 2.00 cores of this CPU (2.00 "
            "CPU ms per image x 1000 images/s), so these 2 cores, the loader's alone, could feed "
            "about 1.00 "
            "accelerator; more readers buy 2.00x (processes:2 against serial).");
  EXPECT_EQ(a[1],
            "Machine load during the study: other processes kept 0.10 of 2 cores busy on "
            "average; load average 1.50 at the end.");
}

TEST(ReportAnswer, CantTellAtThisSpreadAndFedAccelerator) {
  // 1.25x apart, runs spread 60%: can't tell. And a cell that waits 5%: the accelerator bounds.
  const auto a =
      answer(answer_study({repeated(decode_cell("serial", 1.0, 0.05, 0.3), {0.7, 1.0, 1.3}),
                           repeated(decode_cell("threads:2", 0.8, 0.04, 0.3), {0.6, 0.8, 1.0})},
                          1.5));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NE(a[0].find("bound by the accelerator (it is fed)"), std::string::npos) << a[0];
  EXPECT_NE(a[0].find("more readers: can't tell at this spread (60% between runs, 25% between "
                      "serial and threads:2)"),
            std::string::npos)
      << a[0];
  EXPECT_NE(a[1].find("a loaded machine"), std::string::npos) << a[1];
  // Storage-bound, and no emulated consumer at all.
  json r = decode_cell("serial", 1.0, 0.7, 0.2);
  r["bound"] = "read";
  EXPECT_NE(answer(answer_study({r}))[0].find("bound by the storage"), std::string::npos);
  EXPECT_NE(answer(study({cell("serial", 1, 0.5)}))[0].find("No finished cell has an emulated"),
            std::string::npos);
}

TEST(ReportHtml, OpensWithTheAnswerAndDrawsTheAcceleratorLine) {
  const std::string html = render_report(answer_study(
      {decode_cell("serial", 1.0, 0.6, 0.64), decode_cell("processes:2", 0.5, 0.4, 1.28)}));
  const size_t answer_at = html.find(R"(id="answer")");
  ASSERT_NE(answer_at, std::string::npos);
  EXPECT_LT(answer_at, html.find(R"(id="conclusions")"));
  EXPECT_EQ(count(html, R"(data-line="accelerator")"), 1u);
  EXPECT_NE(html.find("accelerator alone: 0.32 s (1000 img/s)"), std::string::npos);
}

TEST(ReportConclusions, GapsOnlyWhenTheyAddToTheWait) {
  json s = cell("serial", 2, 0.2), t = cell("threads:2", 1, 0.02);
  s["gap_share"] = 0.41;
  t["gap_share"] = 0.03;
  auto text = all_text(conclusions(study({s, t})));
  EXPECT_NE(text.find("the serial reader leaves 41% gaps vs 3% for threads:2"), std::string::npos)
      << text;
  s["gap_share"] = 0.21;  // the gaps are the wait: nothing new to say
  text = all_text(conclusions(study({s, t})));
  EXPECT_EQ(text.find("gaps vs"), std::string::npos) << text;
}

TEST(ReportConclusions, DecodeOrReadBoundFromTheStageTimes) {
  json read = cell("serial", 2, 0.5), decode = cell("serial", 2, 0.5, "nfs");
  read.erase("bound");  // where the runner wrote no bound, the stage times decide
  decode.erase("bound");
  read["cpu_ms_per_image"] = {{"read", 3.0}, {"decode", 1.0}, {"augment", 0.2}, {"collate", 0.1}};
  decode["cpu_ms_per_image"] = {{"read", 0.1}, {"decode", 2.0}, {"augment", 0.2}, {"collate", 0.1}};
  const auto text = all_text(conclusions(study({read, decode})));
  EXPECT_NE(
      text.find("256px on local with emulated:x: the serial reader waits 50% of the time; "
                "fastest: serial (2.0 s, 160 images/s) is read-bound (data wait 50%; 5.0 MB/s, "
                "reading takes 3.0 of 4.3 ms per image)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("decode-bound (data wait 50%; decoding takes 2.0 of 2.4 CPU ms per image)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("by the stage that bounds them: 1 decode, 1 read"), std::string::npos)
      << text;
}

TEST(ReportConclusions, StoragesAgainstTheFirstAndShardRecovery) {
  const auto text = all_text(
      conclusions(study({cell("serial", 1.0, 0.5, "local"), cell("serial", 2.4, 0.8, "nfs"),
                         cell("serial", 1.14, 0.55, "nfs-shards")})));
  EXPECT_NE(
      text.find("256px with emulated:x, serial reader: nfs is 2.4x slower than local; nfs-shards "
                "is 1.14x slower than local, recovering 90% of what per-file nfs loses."),
      std::string::npos)
      << text;
}

TEST(ReportConclusions, ShardsSlowerThanPerFileAreNotANegativeRecovery) {
  const auto text = all_text(
      conclusions(study({cell("serial", 1.0, 0.5, "local"), cell("serial", 1.1, 0.5, "nfs"),
                         cell("serial", 1.3, 0.6, "nfs-shards")})));
  EXPECT_EQ(text.find("recovering"), std::string::npos) << text;
  EXPECT_NE(text.find("nfs-shards is 1.3x slower than local (and 1.18x slower than per-file nfs)"),
            std::string::npos)
      << text;
}

TEST(ReportConclusions, FailedInterruptedAndEmpty) {
  json bad = {{"dataset", "1024px"},   {"storage", "nfs"},
              {"consumer", "cpu:r18"}, {"reader", "processes:4"},
              {"status", "failed"},    {"error", "worker 2 died (signal 9)"}};
  json s = study({cell("serial", 1, 0.5), bad}, "interrupted");
  s["context"]["planned_cells"] = 10;
  const auto c = conclusions(s);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(),
            "The study was interrupted after 2 of 10 cells: what follows covers the finished cells "
            "only.");
  EXPECT_EQ(c.back(),
            "1 cell failed: 1024px on nfs with cpu:r18, processes:4 (worker 2 died (signal 9)).");
  EXPECT_EQ(conclusions(json::object()), std::vector<std::string>{"No cell has finished yet."});
  EXPECT_EQ(all_text(conclusions(study({bad}))),
            "No cell finished successfully.\n"
            "1 cell failed: 1024px on nfs with cpu:r18, processes:4 (worker 2 died (signal 9)).\n");
}

TEST(ReportHtml, EscapesNamesEverywhere) {
  const std::string evil = "<script>alert(1)</script>&\"'";
  json c = cell("serial", 1, 0.5, "lo<cal>", evil);
  c["error"] = "<b>";
  json s = study({c, cell("threads:2", 0.5, 0.1, "lo<cal>", evil)});
  s["context"]["datasets"] = {{{"name", evil}, {"root", "/x/<y>"}}};
  const std::string html = render_report(s);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("lo<cal>"), std::string::npos);
  EXPECT_EQ(html.find("/x/<y>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;"), std::string::npos);
  // One <script> element only: the page's own sorter.
  EXPECT_EQ(count(html, "<script>"), 1u);
}

TEST(ReportHtml, ChartsAndSeriesMatchTheCells) {
  // 2 storages x 1 consumer = 2 steps panels; datasets x reader kinds = series.
  json s = study(
      {cell("serial", 2, 0.5, "local", "256px"), cell("processes:2", 1, 0.2, "local", "256px"),
       cell("processes:4", 0.9, 0.1, "local", "256px"), cell("serial", 4, 0.6, "local", "512px"),
       cell("serial", 3, 0.7, "nfs", "256px")});
  const std::string html = render_report(s);
  EXPECT_EQ(count(html, R"(data-chart="steps-vs-readers")"), 2u);
  EXPECT_EQ(count(html, R"(data-chart="bandwidth")"), 2u);       // one per dataset
  EXPECT_EQ(count(html, R"(data-chart="step-breakdown")"), 2u);  // per dataset x consumer
  EXPECT_EQ(count(html, R"(data-chart="trace")"), 0u);           // no cell has a trace
  EXPECT_EQ(count(html, R"(data-series="256px serial")"), 2u);   // local and nfs panels
  EXPECT_EQ(count(html, R"(data-series="256px processes")"), 1u);
  EXPECT_EQ(count(html, R"(data-series="512px serial")"), 1u);
  EXPECT_EQ(count(html, R"(data-series="wait")"), 2u);
  EXPECT_NE(html.find("No finished cell has a trace excerpt yet."), std::string::npos);
}

// A cell whose size changed (--size-schedule) gets a row per size in the per-size table;
// cells of one size get none, and without such a cell there is no table.
TEST(ReportHtml, PerSizeTableForCellsWhoseSizeChanged) {
  json ramp = cell("threads:2", 2, 0.1);
  const auto size = [](int side, double total) {
    return json{
        {"height", side},
        {"width", side},
        {"steps", 5},
        {"step_ms",
         {{"wait", 1.0}, {"stage", 0.0}, {"compute", total - 1}, {"gap", 0.0}, {"total", total}}}};
  };
  ramp["per_size"] = json::array({size(128, 40), size(192, 90)});
  json fixed = cell("serial", 3, 0.2);
  fixed["per_size"] = json::array({size(224, 120)});
  const std::string html = render_report(study({ramp, fixed}));
  EXPECT_EQ(count(html, R"(<table class="per-size">)"), 1u);
  EXPECT_EQ(count(html, "<td>128x128</td>"), 1u);
  EXPECT_EQ(count(html, "<td>192x192</td>"), 1u);
  EXPECT_EQ(count(html, "<td>224x224</td>"), 0u);
  EXPECT_EQ(count(render_report(study({fixed})), "per-size"), 0u);
}

// The texts of one row of the cells table (the one whose reader is `reader`), by heading.
std::map<std::string, std::string> cells_row(const std::string& html, const std::string& reader) {
  const auto texts = [](const std::string& part, const char* open, const char* close) {
    std::vector<std::string> out;
    for (size_t p = part.find(open); p != std::string::npos; p = part.find(open, p + 1)) {
      const size_t b = part.find('>', p) + 1;
      out.push_back(part.substr(b, part.find(close, b) - b));
    }
    return out;
  };
  const size_t table = html.find(R"(id="cells")");
  const size_t body = html.find("<tbody>", table);
  const auto heads = texts(html.substr(table, body - table), "<th>", "</th>");
  const size_t row = html.find("<td>" + reader + "</td>", body);
  if (table == std::string::npos || row == std::string::npos) return {};
  const size_t b = html.rfind("<tr", row), e = html.find("</tr>", row);
  const auto tds = texts(html.substr(b, e - b), "<td", "</td>");
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < heads.size() && i < tds.size(); ++i) out[heads[i]] = tds[i];
  return out;
}

// The table's spread column is the conclusions' one formula, (max - min) / median of the
// cell's runs; a cell run once has none.
TEST(ReportHtml, CellsTableShowsEachCellsSpread) {
  const std::string html = render_report(study(
      {repeated(cell("serial", 1.2, 0.5), {1.5, 1.0, 1.2}),
       repeated(cell("threads:2", 1.0, 0.3), {0.99, 1.0, 1.03}), cell("processes:2", 0.9, 0.2)}));
  EXPECT_EQ(cells_row(html, "serial")["spread"], "42%") << html;  // 0.5 / 1.2
  EXPECT_EQ(cells_row(html, "threads:2")["spread"], "4.0%");      // 0.04 / 1.0
  EXPECT_EQ(cells_row(html, "processes:2")["spread"], "");
  EXPECT_EQ(cells_row(html, "serial")["time (s)"], "1.2");
  EXPECT_NE(html.find("3 runs per cell, spread up to 42%"), std::string::npos);
}

TEST(ReportHtml, TraceExcerptShowsSlowAndFastWithWorkerLanes) {
  json serial = cell("serial", 2, 0.5, "local", "1024px");
  json par = cell("processes:2", 1, 0.1, "local", "1024px");
  serial["resolution"] = par["resolution"] = 1024;
  auto step = [](double wait, int workers) {
    json samples = json::array();
    for (int w = 0; w < workers; ++w)
      samples.push_back({{"worker", w}, {"stage", "decode"}, {"begin_ms", -5.0}, {"end_ms", 1.0}});
    return json{{"step", 3},       {"wait_ms", wait},    {"compute_ms", 2.0},
                {"begin_ms", 0.0}, {"end_ms", wait + 2}, {"samples", samples}};
  };
  serial["trace"] = {{"slow", step(9, 1)}, {"fast", step(1, 1)}};
  par["trace"] = {{"slow", step(3, 2)}, {"fast", step(0.5, 2)}};
  const std::string html = render_report(study({serial, par}));
  EXPECT_EQ(count(html, R"(data-chart="trace")"), 4u);
  EXPECT_EQ(count(html, R"(data-step="slow")"), 2u);
  EXPECT_NE(html.find("2 of 2 loader threads busy during the step: 0, 1"), std::string::npos);
  EXPECT_NE(html.find("slow step 3: 11 ms (wait 9 ms, compute 2 ms)"), std::string::npos);
}

TEST(ReportHtml, InterruptedBannerAndFailedCells) {
  json bad = {{"dataset", "1024px"},   {"storage", "nfs"},
              {"consumer", "cpu:r18"}, {"reader", "processes:4"},
              {"status", "failed"},    {"error", "worker 2 died (signal 9)"}};
  json s = study({cell("serial", 1, 0.5), bad}, "interrupted");
  const std::string html = render_report(s);
  EXPECT_NE(html.find(R"(data-state="interrupted")"), std::string::npos);
  EXPECT_NE(html.find("This study was interrupted: 2 cells finished."), std::string::npos);
  EXPECT_NE(html.find("<td>worker 2 died (signal 9)</td>"), std::string::npos);
  EXPECT_EQ(render_report(study({cell("serial", 1, 0.5)})).find("data-state"), std::string::npos);
  EXPECT_NE(
      render_report(study({cell("serial", 1, 0.5)}, "running")).find(R"(data-state="running")"),
      std::string::npos);
}

// A cell's reader threads: "threads", else "workers" (studies written before the rename),
// else the reader's text.
TEST(ReportJson, ReaderThreadsReadsTheOldKeyToo) {
  EXPECT_EQ(report::reader_threads(json{{"threads", 4}, {"reader", "threads:4"}}), 4);
  EXPECT_EQ(report::reader_threads(json{{"workers", 3}, {"reader", "processes:3"}}), 3);
  EXPECT_EQ(report::reader_threads(json{{"reader", "threads:2"}}), 2);
  EXPECT_EQ(report::reader_threads(json{{"reader", "serial"}}), 1);
}

// Results written before issue 44 gave each figure one name: each older key reads under its
// new name (study_json.h `field`), the new one winning, and an older study draws what the
// same study written now draws (its context table shows the keys as written).
TEST(ReportJson, OlderKeyNamesStillRead) {
  const std::pair<const char*, const char*> renamed[] = {{"threads", "workers"},
                                                         {"stage", "copy"},
                                                         {"data_wait_share", "data_wait_fraction"},
                                                         {"accelerator_utilisation", "au"},
                                                         {"warmup", "timing_warmup"},
                                                         {"steps", "iterations"}};
  for (const auto& [name, older] : renamed) {
    EXPECT_EQ(report::num(json{{older, 0.25}}, name), 0.25) << older;
    EXPECT_EQ(report::num(json{{name, 0.5}, {older, 0.25}}, name), 0.5) << name;
  }
  json now = cell("threads:2", 2, 0.4);
  now["step_s"]["stage"] = 0.3;
  now["step_s"]["compute"] = 0.9;
  json before = now;
  before["step_s"].erase("stage");
  before["step_s"]["copy"] = 0.3;
  before.erase("steps");
  before["iterations"] = 10;
  before.erase("threads");
  before["workers"] = 2;
  json older_study = study({before});
  older_study["context"].erase("steps");
  older_study["context"]["iterations"] = 10;
  for (const json& s : {study({now}), older_study}) {
    const std::string html = render_report(s);
    EXPECT_NE(html.find("local threads:2 stage: 0.3 s"), std::string::npos);   // breakdown bar
    EXPECT_NE(html.find("time for 10 timed steps"), std::string::npos);        // steps chart
    EXPECT_NE(html.find("<b>10</b>timed steps of batch"), std::string::npos);  // summary
    EXPECT_NE(html.find(R"(data-series="256px threads")"), std::string::npos);
  }
}

TEST(ReportHtml, ToleratesMissingMistypedAndAbsentFields) {
  for (const json& s : {json::object(), json::array(), json(nullptr),
                        json{{"results", json::array()}}, json{{"results", 5}, {"context", "x"}},
                        json{{"results", {json::object(), json(3), json{{"wall_s", "fast"}}}}},
                        json{{"results",
                              {json{{"status", "ok"},
                                    {"wall_s", 1.0},
                                    {"workers", nullptr},
                                    {"trace", 5},
                                    {"step_s", {{"wait", "x"}}},
                                    {"cpu_ms_per_image", nullptr}}}}}}) {
    std::string html;
    ASSERT_NO_THROW(html = render_report(s)) << s.dump();
    EXPECT_NE(html.find("</html>"), std::string::npos);
    ASSERT_NO_THROW(conclusions(s)) << s.dump();
  }
  // One cell, one reader: a chart with one series and a sentence about it.
  const json one = study({cell("serial", 1, 0.5)});
  const std::string html = render_report(one);
  EXPECT_EQ(count(html, R"(data-chart="steps-vs-readers")"), 1u);
  EXPECT_EQ(count(html, "data-series=\"256px serial\""), 1u);
  EXPECT_EQ(conclusions(one).size(), 2u);  // the cell, the tally of bounds
}

TEST(ReportHtml, TheFixtureRenders) {
  std::ifstream in(STOKER_STUDY_SAMPLE);
  ASSERT_TRUE(in) << STOKER_STUDY_SAMPLE;
  const json s = json::parse(in);
  const std::string html = render_report(s);
  // Panels: every (storage, consumer) with an ok cell.
  std::set<std::string> panels;
  for (const auto& c : s["results"])
    if (c["status"] == "ok")
      panels.insert(c["storage"].get<std::string>() + " " + c["consumer"].get<std::string>());
  EXPECT_EQ(count(html, R"(data-chart="steps-vs-readers")"), panels.size());
  EXPECT_EQ(count(html, R"(data-chart="trace")"), 4u);
  EXPECT_NE(html.find("stoker-worker 2 died"), std::string::npos);
  for (const auto& c : conclusions(s)) EXPECT_EQ(c.find("nan"), std::string::npos) << c;
}

}  // namespace
}  // namespace stoker
