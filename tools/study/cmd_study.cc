// SPDX-License-Identifier: Apache-2.0
// stoker study: is storage, decode or compute the bottleneck, and what do more readers buy?
// Sweeps datasets x storages x consumers x readers, one fixed-length cell each, and writes
// DIR/study.json and DIR/report.html after every cell (docs/STUDY.md, docs/FORMATS.md).
// --quick makes its own small datasets and runs a short sweep. The cells themselves are
// tools/study/; the report's rendering is tools/report/.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/system_info.h"
#include "loader/index/index.h"
#include "loader/sources/nfs_url.h"
#include "loader/sources/source.h"
#include "loader/tuning/tuning_candidates.h"
#include "tools/bench/bench_common.h"
#include "tools/cache_dir.h"
#include "tools/commands.h"
#include "tools/gen/gen_dataset.h"
#include "tools/options/loader_options.h"
#include "tools/report/report.h"
#include "tools/result_dir.h"
#include "tools/study/machine_load.h"
#include "tools/study/study_cell.h"
#include "tools/study/study_spec.h"
#include "tools/study/study_storage.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

struct StudyOptions {
  std::vector<std::string> data;
  bool quick = false;
  std::string storages, consumers;
  int steps = CellRun{}.steps, warmup = CellRun{}.warmup;  // per cell (--steps, --warmup)
  int repeats = 3;                                         // runs of every cell, interleaved
  std::string out;
  bool force = false;
  std::string nfs;
  std::string data_root = stoker_cache_dir() + "/study-quick";
  std::string decodes = "cpu";  // --decode: cpu, gpu or both (gpu: cuda consumers' cells)
  LoaderOptions loader;
};

// One group of cells: the same consumer list and storages for every dataset and reader.
struct Sweep {
  std::vector<StudyStorage> storages;
  std::vector<std::optional<ReaderSpec>> readers;  // nullopt: --reader auto
  std::vector<StudyConsumer> consumers;
  CellRun run;
  std::vector<size_t> datasets;             // indices into the study's datasets; empty: all
  std::vector<bool> gpu_decodes = {false};  // --decode: each reader once per entry
};

struct Cell {
  size_t dataset = 0;
  StudyStorage storage = StudyStorage::local;
  ReaderSpec reader;       // auto: its first candidate, serial
  bool automatic = false;  // --reader auto (loader/tuning/): one more reader of the sweep
  const StudyConsumer* consumer = nullptr;
  CellRun run;
  bool gpu_decode = false;  // --decode gpu: the report's "gpu-decode" reader
};

const char* storage_detail(StudyStorage s) {
  switch (s) {
    case StudyStorage::local:
      return "local files, warm page cache (every file read once first)";
    case StudyStorage::local_cold:
      return "local files, posix_fadvise(DONTNEED) before each cell and after each read";
    case StudyStorage::shards:
      return "tar shards (stoker pack, 64 MB), warm page cache";
    case StudyStorage::nfs:
      return "one file per sample over NFS (libnfs)";
    case StudyStorage::nfs_shards:
      return "tar shards over NFS (libnfs)";
  }
  return "";
}

class StudyRun {
 public:
  explicit StudyRun(StudyOptions& o) : o_(o) {}

  void run(const CLI::App& cmd) {
    install_interrupt_handlers();
    // The options first (usage errors, exit 2), then the output directory, then the work.
    try {
      apply_defaults(cmd);
      base_ = o_.loader.to_config();
      if (o_.repeats < 1) fail("--repeats must be at least 1, not {}", o_.repeats);
      if (!o_.nfs.empty() && !is_nfs_url(o_.nfs))
        fail("--nfs {}: not an nfs:// URL (nfs://host/export?args)", o_.nfs);
      plan();
    } catch (const Error& e) {
      throw CLI::ValidationError("study", e.what());
    }
    // Every step is a full batch: images = steps x batch.
    o_.loader.drop_last = base_.sampler.drop_last = true;
    if (o_.out.empty()) o_.out = default_out("study");
    prepare_out(o_.out, o_.force, "study.json");
    exports_ = std::make_unique<NfsExports>(o_.nfs, (fs::path(o_.out) / "nfs").string());
    t0_ = now_ns();
    load0_ = load_mark();
    if (o_.quick) make_quick_datasets();
    if (interrupted()) stop("interrupted before the first cell");
    open_datasets();
    write_result("running");
    fmt::print(
        "# stoker {} study, {}: {} cells ({} datasets) x {} runs, {} steps of batch {} "
        "after {} warm-up, result in {}\n",
        STOKER_VERSION, utc_now(), cells_.size(), roots_.size(), o_.repeats, o_.steps,
        base_.sampler.batch_size, o_.warmup, o_.out);
    fmt::print("{:<10} {:<11} {:<24} {:<12} {:>8} {:>8} {:>6} {:>6} {:>6}  {}\n", "dataset",
               "storage", "consumer", "reader", "img/s", "MB/s", "wait%", "AU%", "gap%", "bound");
    std::fflush(stdout);
    // Interleaved rounds: every cell once, then every cell again, so that a slow spell of a
    // shared machine spreads over all cells instead of biasing some.
    Progress progress("study", cells_.size() * size_t(o_.repeats), "runs");
    for (int round = 0; round < o_.repeats; ++round) {
      if (round > 0) fmt::print("# run {} of {}\n", round + 1, o_.repeats);
      for (size_t i = 0; i < cells_.size(); ++i) {
        const std::string where =
            o_.repeats > 1 ? fmt::format(" (run {} of {})", round + 1, o_.repeats) : "";
        if (interrupted()) {
          progress.finish();
          stop(fmt::format("interrupted after {} of {} cells{}", round > 0 ? i : results_.size(),
                           cells_.size(), where));
        }
        if (round > 0 && results_[i]["status"] != "ok") continue;  // failed: not retried
        try {
          run_cell(cells_[i], i);
        } catch (const Interrupted&) {
          progress.finish();
          stop(fmt::format("interrupted in cell {} of {}{}; {} finished cells kept", i + 1,
                           cells_.size(), where, results_.size()));
        }
        write_result("running");
        const nlohmann::json& done = results_[i];
        progress.add(1, done.contains("read_mb_per_s")
                            ? uint64_t(done["read_mb_per_s"].get<double>() *
                                       done["wall_s"].get<double>() * 1e6)
                            : 0);
      }
    }
    progress.finish();
    write_result("complete");  // (the last cell may be a failed one, not run again)
    exports_->stop_all();
    fmt::print("# {} cells in {:.1f} s ({} failed): {}/study.json, {}/report.html\n",
               results_.size(), (now_ns() - t0_) * 1e-9, failed_, o_.out, o_.out);
  }

 private:
  // --quick fills in every axis the command line left open.
  void apply_defaults(const CLI::App& cmd) {
    const bool q = o_.quick;
    auto given = [&](const char* name) { return cmd.count(name) > 0; };
    if (q && !o_.data.empty()) fail("--quick makes its own datasets: give datasets or --quick");
    if (!q && o_.data.empty())
      throw CLI::ValidationError("study", "give dataset roots (or nfs:// URLs) or --quick");
    if (q) {
      if (!given("--steps")) o_.steps = 40;
      if (!given("--warmup")) o_.warmup = 2;
      if (!given("--batch")) o_.loader.batch = 16;
      if (!given("--size")) o_.loader.size = 112;
    }
    const int n = online_cpus();
    if (o_.loader.reader.empty())
      o_.loader.reader = q ? fmt::format("serial,processes:1..{},threads:{},uring:16", n, n)
                           : fmt::format("serial,processes:1..{},threads:{},uring:32", n, n);
    if (o_.storages.empty()) o_.storages = "local,local-cold,shards,nfs,nfs-shards";
    if (o_.consumers.empty()) o_.consumers = "emulated:resnet50-h100";
  }

  void plan() {
    Sweep main{parse_study_storages(o_.storages),
               parse_reader_choices(o_.loader.reader),
               parse_study_consumers(o_.consumers),
               {o_.steps, o_.warmup},
               {},
               parse_study_decodes(o_.decodes)};
    const bool gpu = main.gpu_decodes.back() || main.gpu_decodes.front();
    if (gpu && std::none_of(main.consumers.begin(), main.consumers.end(),
                            [](const auto& c) { return c.kind == StudyConsumer::Kind::cuda; }))
      usage_fail("study: --decode {} decodes for cuda:ARCH consumers, and --consumer {} has none",
                 o_.decodes, o_.consumers);
    sweeps_.push_back(std::move(main));
    // The quick study adds the CPU trainer on local storage only, serial against the most
    // parallel reader, at the smallest and the largest resolution, for 3 steps: a ResNet-18
    // step of 16 images at 112 px takes 1.5 s on 2 idle cores (6 s on a loaded one), a full
    // product would not fit in 10 minutes.
    if (o_.quick && o_.consumers == "emulated:resnet50-h100") {
      Sweep cpu{{StudyStorage::local},
                {parse_reader("serial"), parse_reader(fmt::format("processes:{}", online_cpus()))},
                parse_study_consumers("cpu:resnet18"),
                {std::min(o_.steps, 3), std::min(o_.warmup, 1)},
                {0, 2}};
      sweeps_.push_back(std::move(cpu));
    }
    leave_out_nfs_without_root();
  }

  // The study's own NFS server (NFS-Ganesha through scripts/nfs_serve.sh) needs root: as
  // another user its cells could only fail, each with the same reason. They are left out
  // instead, said once here and in the result's context. (--nfs reads an existing export.)
  void leave_out_nfs_without_root() {
    if (!o_.nfs.empty() || geteuid() == 0) return;
    const auto is_nfs = [](StudyStorage st) {
      return st == StudyStorage::nfs || st == StudyStorage::nfs_shards;
    };
    std::set<std::string> dropped;
    bool left = false;
    for (Sweep& sw : sweeps_) {
      for (StudyStorage st : sw.storages)
        if (is_nfs(st)) dropped.insert(storage_name(st));
      std::erase_if(sw.storages, is_nfs);
      left = left || !sw.storages.empty();
    }
    if (dropped.empty()) return;
    std::string names;
    for (const std::string& n : dropped) names += (names.empty() ? "" : ", ") + n;
    left_out_ = fmt::format(
        "{} cells: the study's NFS server (NFS-Ganesha) needs root and this is uid {}; run as "
        "root, or read an existing export with --nfs URL",
        names, geteuid());
    if (!left) fail("--storage {}: nothing left to run ({})", o_.storages, left_out_);
    std::erase_if(sweeps_, [](const Sweep& sw) { return sw.storages.empty(); });
    fmt::print("# left out: {}\n", left_out_);
  }

  void make_quick_datasets() {
    GenConfig g;
    g.out = o_.data_root;
    g.sizes = {256, 512, 1024};
    g.classes = 10;
    g.per_class = 20;
    fmt::print(
        "# quick: datasets in {} (stoker gen {} --sizes 256,512,1024 --classes {} "
        "--per-class {} --seed {}; made once, then reused)\n",
        g.out, g.out, g.classes, g.per_class, g.seed);
    std::fflush(stdout);
    const GenResult r = generate_dataset(g);
    o_.data = r.roots;
    resolutions_ = g.sizes;
  }

  void open_datasets() {
    roots_ = o_.data;
    for (size_t d = 0; d < roots_.size(); ++d) {
      const Index index = open_index(roots_[d]);
      int res = d < resolutions_.size() ? resolutions_[d] : resolution_of(short_name(roots_[d]));
      datasets_.push_back(dataset_json(roots_[d], index, res));
    }
    // Cells in sweep order: dataset, then storage, consumer, reader (the report's curves).
    for (size_t d = 0; d < roots_.size(); ++d)
      for (const Sweep& s : sweeps_)
        for (StudyStorage st : s.storages)
          if (s.datasets.empty() ||
              std::find(s.datasets.begin(), s.datasets.end(), d) != s.datasets.end())
            for (const StudyConsumer& c : s.consumers)
              for (const std::optional<ReaderSpec>& r : s.readers)
                for (bool g : s.gpu_decodes)
                  // GPU decode feeds the GPU trainer, from readers in this process (auto
                  // skips its processes:N candidates there).
                  if (!g || (c.kind == StudyConsumer::Kind::cuda &&
                             (!r || r->kind != ReaderSpec::Kind::processes)))
                    cells_.push_back(
                        {d, st, r.value_or(auto_start_reader(online_cpus())), !r, &c, s.run, g});
  }

  // The root a cell of this dataset and storage reads, made ready (packed, exported, warmed)
  // once per pair; stoker::Error when it cannot be (the cells then fail with the reason).
  const Index& storage_index(size_t d, StudyStorage st) {
    const std::pair<size_t, int> key{d, int(st)};
    if (auto it = prepared_.find(key); it != prepared_.end()) {
      if (!it->second.error.empty()) fail("{}", it->second.error);
      return *it->second.index;
    }
    Prepared& p = prepared_[key];
    try {
      const std::string& root = roots_[d];
      const std::string name = short_name(root);
      const bool local = !is_nfs_url(root);
      // Packed once per dataset, for shards and nfs-shards alike; numbered, as two
      // datasets may share a name.
      auto shards = [&] {
        if (!local) fail("{}: shards are packed from a local dataset", root);
        const std::string dir =
            (fs::path(o_.out) / "shards" / fmt::format("{}-{}", d, name)).string();
        if (!packed_.count(d)) {
          pack_study_shards(root, dir);
          packed_.insert(d);
        }
        return dir;
      };
      std::string path;
      switch (st) {
        case StudyStorage::local:
        case StudyStorage::local_cold:
          if (!local) fail("{}: {} storage needs a local dataset", root, storage_name(st));
          path = root;
          break;
        case StudyStorage::shards:
          path = shards();
          break;
        case StudyStorage::nfs:
          if (!local && o_.nfs.empty()) {
            path = root;
          } else {
            path = exports_->url_of(root, name);
          }
          break;
        case StudyStorage::nfs_shards: {
          const std::string dir = o_.nfs.empty() ? shards() : "";
          path = exports_->url_of(dir, name + "-shards");
          break;
        }
      }
      p.index = std::make_unique<Index>(open_index(path));
    } catch (const Interrupted&) {
      throw;
    } catch (const Error& e) {
      p.error = e.what();
      throw;
    }
    return *p.index;
  }

  // The cell's figures are those of its median run (by wall time; the lower middle of an
  // even count, so that they are one run's, consistent with each other), with every run's
  // wall time in "wall_s_runs". A run that fails after a good one is counted, not kept.
  static nlohmann::json summarize(const std::vector<nlohmann::json>& runs) {
    std::vector<const nlohmann::json*> ok;
    nlohmann::json walls = nlohmann::json::array();
    for (const nlohmann::json& r : runs)
      if (r["status"] == "ok") {
        ok.push_back(&r);
        walls.push_back(r["wall_s"]);
      }
    if (ok.empty()) return runs.front();
    std::vector<const nlohmann::json*> by_wall = ok;
    std::sort(by_wall.begin(), by_wall.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
      return (*a)["wall_s"].get<double>() < (*b)["wall_s"].get<double>();
    });
    nlohmann::json cell = *by_wall[(by_wall.size() - 1) / 2];
    cell["wall_s_runs"] = walls;
    if (ok.size() < runs.size()) cell["failed_runs"] = runs.size() - ok.size();
    return cell;
  }

  // Runs cell `i` once more: its first run appends to results_, later ones replace its
  // summary there.
  void run_cell(const Cell& c, size_t i) {
    nlohmann::json cell = measure_cell(c);
    print_row(cell);
    if (i == runs_.size()) {
      if (cell["status"] != "ok") ++failed_;
      runs_.push_back({std::move(cell)});
      results_.push_back(summarize(runs_.back()));
    } else {
      runs_[i].push_back(std::move(cell));
      results_[i] = summarize(runs_[i]);
    }
  }

  nlohmann::json measure_cell(const Cell& c) {
    const StudyConsumer& consumer = *c.consumer;
    nlohmann::json cell = {
        {"dataset", datasets_[c.dataset]["name"]},
        {"resolution", datasets_[c.dataset]["resolution"]},
        {"storage", storage_name(c.storage)},
        {"consumer", consumer.name},
        {"reader", (c.automatic ? "auto" : c.reader.text()) + (c.gpu_decode ? "+gpu-decode" : "")},
        {"reader_kind", c.gpu_decode  ? "gpu-decode"
                        : c.automatic ? "auto"
                                      : reader_kind(c.reader)},
        {"threads", c.reader.threads},
        {"decode", c.gpu_decode ? "gpu" : "cpu"}};
    if (c.reader.kind == ReaderSpec::Kind::uring && !c.automatic)
      cell["queue_depth"] = c.reader.queue_depth;
    try {
      const Index& index = storage_index(c.dataset, c.storage);
      LoaderConfig config = base_;
      config.reader = c.reader;
      if (c.gpu_decode) config.decode_device = DecodeDevice::gpu;
      if (c.storage == StudyStorage::local_cold) {
        config.source.evict_after_read = true;
        warm_.erase(index.root);
        const size_t failed = evict_from_page_cache(index);
        if (failed)
          fmt::print("# warning: {} files of {} could not be evicted from the page cache\n", failed,
                     index.root);
      } else if (!is_nfs_url(index.root)) {
        warm(index);
      } else if (o_.nfs.empty() && !is_nfs_url(roots_[c.dataset])) {
        // Our own server reads the local files: warm its page cache (local-cold evicts it).
        warm(storage_index(c.dataset, c.storage == StudyStorage::nfs ? StudyStorage::local
                                                                     : StudyStorage::shards));
      }
      // auto: its `threads` are the chosen reader's, and `reader_tuning` says what it did.
      const nlohmann::json m =
          run_study_cell(index, config, consumer, c.run,
                         c.automatic ? std::optional(o_.loader.tuner_limits()) : std::nullopt);
      cell["status"] = "ok";
      cell["warmup"] = c.run.warmup;
      cell.update(m);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      cell["status"] = "failed";
      cell["error"] = e.what();
      cell["steps"] = c.run.steps;
      cell["warmup"] = c.run.warmup;
      cell["batch"] = base_.sampler.batch_size;
    }
    return cell;
  }

  // Reads a local dataset once so its cells measure the loader, not first touches; again
  // only after a local-cold cell evicted it.
  void warm(const Index& index) {
    if (warm_.insert(index.root).second) (void)warm_page_cache(index);
  }

  static const char* reader_kind(const ReaderSpec& r) {
    switch (r.kind) {
      case ReaderSpec::Kind::serial:
        return "serial";
      case ReaderSpec::Kind::threads:
        return "threads";
      case ReaderSpec::Kind::processes:
        return "processes";
      case ReaderSpec::Kind::uring:
        return "uring";
    }
    return "?";
  }

  void print_row(const nlohmann::json& c) {
    const std::string head =
        fmt::format("{:<10} {:<11} {:<24} {:<12}", c["dataset"].get<std::string>(),
                    c["storage"].get<std::string>(), c["consumer"].get<std::string>(),
                    c["reader"].get<std::string>());
    if (c["status"] == "ok") {
      fmt::print("{} {:>8.1f} {:>8.1f} {:>6.1f} {:>6.1f} {:>6.1f}  {}\n", head,
                 c["images_per_s"].get<double>(), c["read_mb_per_s"].get<double>(),
                 100 * c["data_wait_share"].get<double>(),
                 100 * c["accelerator_utilisation"].get<double>(),
                 100 * c["gap_share"].get<double>(), c["bound"].get<std::string>());
    } else {
      fmt::print("{} FAILED: {}\n", head, c["error"].get<std::string>());
    }
    std::fflush(stdout);
  }

  nlohmann::json context(const std::string& state) const {
    nlohmann::json libs = nlohmann::json::object();
    const nlohmann::json versions = library_versions();
    for (const auto& [k, v] : versions.items())
      libs[k] = v.is_string() ? v.get<std::string>() : v.dump();
    nlohmann::json storages = nlohmann::json::array(), consumers = nlohmann::json::array();
    std::vector<std::string> seen;
    for (const Sweep& s : sweeps_) {
      for (StudyStorage st : s.storages) {
        if (std::find(seen.begin(), seen.end(), storage_name(st)) != seen.end()) continue;
        seen.push_back(storage_name(st));
        const bool nfs = st == StudyStorage::nfs || st == StudyStorage::nfs_shards;
        std::string detail = storage_detail(st);
        if (nfs)
          detail += o_.nfs.empty() ? ", NFS-Ganesha on loopback started by the study"
                                   : fmt::format(", the server of {}", o_.nfs);
        storages.push_back({{"name", storage_name(st)},
                            {"kind", nfs                          ? "nfs"
                                     : st == StudyStorage::shards ? "shards"
                                                                  : "local"},
                            {"detail", detail}});
      }
      for (const StudyConsumer& c : s.consumers) {
        nlohmann::json j = {{"name", c.name}, {"kind", c.kind_name()}};
        if (c.kind == StudyConsumer::Kind::emulated)
          j["images_per_s"] = c.accelerator.images_per_s();
        else
          j["arch"] = c.arch;
        consumers.push_back(std::move(j));
      }
    }
    // The machine, the loader options every cell shares (by their JSON keys), the study's own.
    nlohmann::json context = machine_context();
    context.update(loader_options_json(o_.loader));
    context.update({{"tool", "stoker study"},
                    {"version", STOKER_VERSION},
                    {"date", date_},
                    {"command", command_},
                    {"libraries", libs},
                    {"gpu", nullptr},
                    {"steps", o_.steps},  // the timed steps (`iterations` before issue 44)
                    {"warmup", o_.warmup},
                    {"repeats", o_.repeats},
                    {"quick", o_.quick},
                    {"datasets", datasets_},
                    {"storages", storages},
                    {"consumers", consumers},
                    {"planned_cells", cells_.size()},
                    {"left_out", left_out_},
                    {"finished_cells", results_.size()},
                    {"state", state},
                    {"elapsed_s", (now_ns() - t0_) * 1e-9},
                    {"machine_load", machine_load_json(load0_)}});
    return context;
  }

  void write_result(const std::string& state) {
    write_result_and_report(o_.out, "study.json",
                            {{"context", context(state)}, {"results", results_}}, render_report);
  }

  // Saves what is finished, stops our NFS servers and leaves with the interrupt's status.
  [[noreturn]] void stop(const std::string& why) {
    write_result("interrupted");
    exports_->stop_all();
    throw Interrupted(
        fmt::format("study {}: {}/study.json and {}/report.html hold the finished "
                    "cells",
                    why, o_.out, o_.out));
  }

  struct Prepared {
    std::unique_ptr<Index> index;
    std::string error;
  };

  StudyOptions& o_;
  LoaderConfig base_;
  std::vector<Sweep> sweeps_;
  std::vector<std::string> roots_;
  std::string left_out_;  // what the study cannot run here, and why (empty: nothing)
  std::vector<std::vector<nlohmann::json>> runs_;  // [cell][run]: every run of every cell
  std::vector<int> resolutions_;
  std::vector<nlohmann::json> datasets_;
  std::vector<Cell> cells_;
  std::map<std::pair<size_t, int>, Prepared> prepared_;
  std::set<size_t> packed_;     // datasets whose shards are made
  std::set<std::string> warm_;  // local roots read since their last eviction
  std::unique_ptr<NfsExports> exports_;
  nlohmann::json results_ = nlohmann::json::array();
  size_t failed_ = 0;
  int64_t t0_ = now_ns();
  LoadMark load0_ = load_mark();  // how loaded the machine was, from here on
  std::string date_ = utc_now(), command_ = command_line();
};

}  // namespace

void add_study_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "study",
      "Sweep datasets x storages x readers x consumers: what bounds training, and what "
      "more readers buy (JSON + HTML report)");
  auto o = std::make_shared<StudyOptions>();
  o->loader.batch = 32;
  o->loader.transform = "crop";
  cmd->add_option("data", o->data,
                  "Dataset roots (ImageFolder roots, list files, packed shards, nfs:// URLs)");
  cmd->add_flag("--quick", o->quick,
                "Generate small datasets at 256, 512 and 1024 px and run a short sweep "
                "(emulated accelerator everywhere, the CPU trainer on local storage)");
  cmd->add_option("--storage", o->storages,
                  "Storages: local, local-cold, shards, nfs, nfs-shards (default: all)");
  cmd->add_option("--consumer", o->consumers,
                  "Consumers: emulated:SPEC (resnet50-h100, a rate, T/N), cpu:ARCH, cuda:ARCH "
                  "(default emulated:resnet50-h100)");
  add_command_option(*cmd, "--steps", o->steps,
                     {"Timed steps per cell (quick: 40); --iterations: its older name, "
                      "deprecated"});
  add_command_option(*cmd, "--warmup", o->warmup, {"Untimed steps before them (quick: 2)"});
  cmd->add_option("--repeats", o->repeats,
                  "Runs of every cell, interleaved (all cells once, then again): the report "
                  "gives their spread and calls a difference only beyond it")
      ->capture_default_str();
  cmd->add_option("--out", o->out,
                  "Result directory: study.json, report.html, shards, NFS state (default "
                  "study-YYYYmmdd-HHMMSS); an existing result needs --force");
  cmd->add_flag("--force", o->force, "Replace the result already in --out");
  cmd->add_option("--nfs", o->nfs,
                  "An existing NFS export to read instead of starting a local server: nfs cells "
                  "read <URL>/<dataset name>, nfs-shards cells <URL>/<dataset name>-shards");
  add_command_option(*cmd, "--decode", o->decodes, study_decode_use());
  cmd->add_option("--data-root", o->data_root, "Where --quick makes its datasets")
      ->capture_default_str();
  // The storage axis chooses the source; every cell drops the short last batch and decodes.
  o->loader.add_to(*cmd, {"--drop-last", "--source", "--null-file", "--direct", "--no-decode"});
  cmd->callback([o, cmd] { StudyRun(*o).run(*cmd); });
}

}  // namespace stoker
