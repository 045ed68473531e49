// SPDX-License-Identifier: Apache-2.0
// stoker qualify: how many accelerators can this storage and these cores feed, at each
// resolution? MLPerf Storage's question (the largest N for which N emulated accelerators all
// hold AU >= 90%), asked twice: with real decode and read only. For each dataset x storage x
// mode it searches N (qualify_spec.h: doubling, then bisection), runs each N's fleet
// (qualify_fleet.h) --repeats times and judges the median, and writes DIR/qualify.json and
// DIR/report.html after every step (docs/QUALIFY.md, docs/FORMATS.md).
//
// A command of its own, not a study mode: the study crosses fixed cells of one loader each
// and asks what bounds them; the qualification searches a count, N loaders at a time, and
// its answer is that count. What they share is shared code: the storages (NFS-Ganesha through
// scripts/nfs_serve.sh, its shaped links), the emulated accelerator and its AU, the result
// folder.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/system_info.h"
#include "loader/index/index.h"
#include "loader/sources/nfs_url.h"
#include "tools/bench/bench_common.h"
#include "tools/cache_dir.h"
#include "tools/commands.h"
#include "tools/options/loader_options.h"
#include "tools/qualify/qualify_fleet.h"
#include "tools/qualify/qualify_spec.h"
#include "tools/report/report.h"
#include "tools/result_dir.h"
#include "tools/study/machine_load.h"
#include "tools/study/study_storage.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

struct QualifyOptions {
  std::vector<std::string> data;
  std::string storages = "local";
  std::string accelerator = "resnet50-h100";
  std::string modes = "decode,read";
  double seconds = 2;
  int repeats = 3;
  int max_accelerators = 64;
  std::string out;
  bool force = false;
  std::string default_root = stoker_cache_dir() + "/default";
  LoaderOptions loader;
};

// The median of a step's runs by their least AU (the lower middle of an even count, so that
// its figures are one run's), with every run's au_min and images/s as its spread.
nlohmann::json median_run(const std::vector<nlohmann::json>& runs) {
  std::vector<const nlohmann::json*> by_au;
  for (const nlohmann::json& r : runs) by_au.push_back(&r);
  std::sort(by_au.begin(), by_au.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return (*a)["au_min"].get<double>() < (*b)["au_min"].get<double>();
  });
  nlohmann::json m = *by_au[(by_au.size() - 1) / 2];
  nlohmann::json aus = nlohmann::json::array(), rates = nlohmann::json::array();
  for (const nlohmann::json& r : runs) {
    aus.push_back(r["au_min"]);
    rates.push_back(r["images_per_s"]);
  }
  m["runs"] = {{"au_min", aus}, {"images_per_s", rates}};
  m.erase("per_accelerator");
  m["per_accelerator_au"] = nlohmann::json::array();
  for (const nlohmann::json& a : by_au[(by_au.size() - 1) / 2]->at("per_accelerator"))
    m["per_accelerator_au"].push_back(a["accelerator_utilisation"]);
  return m;
}

class QualifyRun {
 public:
  explicit QualifyRun(QualifyOptions& o) : o_(o) {}

  void run() {
    install_interrupt_handlers();
    check();
    if (o_.out.empty()) o_.out = default_out("qualify");
    prepare_out(o_.out, o_.force, "qualify.json");
    exports_ = std::make_unique<NfsExports>("", (fs::path(o_.out) / "nfs").string());
    if (o_.data.empty()) o_.data = builtin_datasets(o_.default_root);
    open_datasets();
    fmt::print(
        "# stoker {} qualify, {}: {} dataset(s) x {} storage(s) x {} mode(s); accelerator {} "
        "({:.0f} img/s each){}; AU >= {:.0f}% for every accelerator; {} s a step, median of {}; "
        "reader {} per accelerator, batch {}; result in {}\n",
        STOKER_VERSION, date_, roots_.size(), storages_.size(), modes_.size(), profile_.name,
        profile_.accelerator.images_per_s(),
        profile_.note.empty() ? "" : " (" + profile_.note + ")", 100 * kAuTarget, o_.seconds,
        o_.repeats, base_.reader.text(), base_.sampler.batch_size, o_.out);
    fmt::print("{:<10} {:<14} {:<6} {:>4} {:>6} {:>9} {:>8} {:>6} {:>6}  {}\n", "dataset",
               "storage", "mode", "N", "held", "img/s", "MB/s", "AU%", "cores", "spread AU%");
    std::fflush(stdout);
    write_result("running");
    const std::vector<QualifyStorage> remote = {{QualifyStorage::Kind::nfs_url, "", "nfs-url"}};
    for (size_t d = 0; d < roots_.size(); ++d)
      for (const QualifyStorage& s : is_nfs_url(roots_[d]) ? remote : storages_)
        for (QualifyMode m : modes_) qualify(d, s, m);
    write_result("complete");
    exports_->stop_all();
    print_answers();
    if (failed_ > 0)
      fail("{} of {} searches failed (each with its reason in {}/qualify.json)", failed_,
           results_.size(), o_.out);
  }

 private:
  void check() {
    if (o_.seconds <= 0) usage_fail("--seconds must be above 0");
    if (o_.repeats < 1) usage_fail("--repeats must be at least 1");
    if (o_.max_accelerators < 1) usage_fail("--max-accelerators must be at least 1");
    storages_ = parse_qualify_storages(o_.storages);
    modes_ = parse_qualify_modes(o_.modes);
    profile_ = parse_accelerator_profile(o_.accelerator);
    base_ = o_.loader.to_config();
    base_.reader = o_.loader.one_reader("qualify");
    base_.sampler.drop_last = true;  // every step a full batch, every accelerator the same
  }

  void open_datasets() {
    roots_ = o_.data;
    for (const std::string& root : roots_) {
      indexes_.push_back(std::make_unique<Index>(open_index(root)));
      datasets_.push_back(dataset_json(root, *indexes_.back(), resolution_of(short_name(root))));
      if (is_nfs_url(root))
        fmt::print(
            "# {}: read from its own server (storage nfs-url: its caches are the server's, not "
            "ours to evict; --storage applies to local datasets)\n",
            root);
    }
  }

  // The index a storage reads for dataset `d`, made ready (exported) once per pair.
  const Index& storage_index(size_t d, const QualifyStorage& s) {
    if (s.kind != QualifyStorage::Kind::nfs) return *indexes_[d];  // local, or the URL given
    const std::string key = fmt::format("{}@{}", d, s.name);
    if (auto it = nfs_.find(key); it != nfs_.end()) return *it->second;
    const std::string url = exports_->url_of(roots_[d], short_name(roots_[d]), s.link);
    return *(nfs_[key] = std::make_unique<Index>(open_index(url)));
  }

  // Before each fleet run: the caches as the storage asks. local: warm (read once after a
  // cold run evicted it); local-cold: evicted, and each read evicts its file after it; nfs:
  // the server's files evicted (libnfs keeps no client cache).
  void set_caches(size_t d, const QualifyStorage& s, const Index& index, LoaderConfig& config) {
    const Index& local = *indexes_[d];
    size_t failed = 0;
    if (s.kind == QualifyStorage::Kind::nfs_url) return;  // as its server keeps them
    if (s.kind == QualifyStorage::Kind::local) {
      if (warm_.insert(local.root).second) (void)warm_page_cache(local);
      return;
    }
    warm_.erase(local.root);
    if (s.kind == QualifyStorage::Kind::local_cold) {
      config.source.evict_after_read = true;
      failed = evict_from_page_cache(local);
    } else {
      failed = evict_from_page_cache(index, server_cold_root(index));
    }
    if (failed)
      fmt::print("# warning: {} files of {} stayed in the page cache\n", failed, local.root);
  }

  // The search for one dataset, storage and mode; its entry in results_ grows step by step.
  void qualify(size_t d, const QualifyStorage& s, QualifyMode mode) {
    nlohmann::json entry = {{"dataset", datasets_[d]["name"]},
                            {"resolution", datasets_[d]["resolution"]},
                            {"storage", s.name},
                            {"mode", mode_name(mode)},
                            {"steps", nlohmann::json::array()}};
    results_.push_back(entry);
    nlohmann::json& e = results_.back();
    try {
      const Index& index = storage_index(d, s);
      if (s.kind == QualifyStorage::Kind::nfs) {
        e["link"] = exports_->link_of(roots_[d], s.link);
        e["caches"] = {{"client", "none"}, {"server", "cold"}};
      } else if (s.kind == QualifyStorage::Kind::nfs_url) {
        e["caches"] = {{"client", "none"}, {"server", "as the server keeps it"}};
      } else {
        e["caches"] = {{"client", s.kind == QualifyStorage::Kind::local ? "warm" : "cold"},
                       {"server", "none"}};
      }
      search(d, s, mode, index, e);
    } catch (const Interrupted&) {
      stop(fmt::format("interrupted in {} {} {}", short_name(roots_[d]), s.name, mode_name(mode)));
    } catch (const std::exception& ex) {
      e["status"] = "failed";
      e["error"] = ex.what();
      ++failed_;
      fmt::print("{:<10} {:<14} {:<6} failed: {}\n", short_name(roots_[d]), s.name, mode_name(mode),
                 ex.what());
      std::fflush(stdout);
    }
    write_result("running");
  }

  void search(size_t d, const QualifyStorage& s, QualifyMode mode, const Index& index,
              nlohmann::json& e) {
    LoaderConfig config = base_;
    config.no_decode = mode == QualifyMode::read;
    // The dataset caps N: each accelerator needs a full batch of every epoch.
    const int cap = int(std::min<size_t>(
        size_t(o_.max_accelerators), index.size() / std::max<size_t>(1, base_.sampler.batch_size)));
    if (cap < 1)
      fail("{} has {} images, fewer than one batch of {}", index.root, index.size(),
           base_.sampler.batch_size);
    const double link_mb = link_mb_per_s(e);
    int held = 0, failed = 0;
    nlohmann::json bound_step;
    for (int n; (n = next_accelerators(held, failed, cap)) != 0;) {
      std::vector<nlohmann::json> runs;
      for (int r = 0; r < o_.repeats; ++r) {
        if (interrupted()) throw Interrupted("qualify interrupted");
        LoaderConfig c = config;
        set_caches(d, s, index, c);
        FleetRun fr;
        fr.accelerators = n;
        fr.seconds = o_.seconds;
        fr.warmup = std::max<size_t>(2, base_.prefetch);
        if (s.kind == QualifyStorage::Kind::nfs)
          fr.server_cpu_seconds = [this, d, link = s.link] {
            return std::max(0.0, exports_->server_cpu_seconds(roots_[d], link));
          };
        runs.push_back(run_fleet(index, c, profile_.accelerator, fr));
      }
      nlohmann::json step = median_run(runs);
      BoundFacts f;
      f.decode = mode == QualifyMode::decode;
      f.mb_per_s = step["read_mb_per_s"];
      f.link_mb_per_s = link_mb;
      f.loader_cores = step["loader_cores_busy"];
      f.server_cores = step["server_cores_busy"];
      f.machine_cores =
          step["machine_cores_busy"].is_number() ? step["machine_cores_busy"].get<double>() : -1;
      f.host_cores = online_cpus();
      if (!step["held"].get<bool>()) step["bound"] = qualify_bound(f);
      print_step(d, s, mode, step);
      if (step["held"].get<bool>()) {
        held = n;
      } else {
        failed = n;
        bound_step = step;
      }
      e["steps"].push_back(step);
      write_result("running");
    }
    answer(e, held, failed, cap, bound_step);
  }

  static double link_mb_per_s(const nlohmann::json& e) {
    if (!e.contains("link") || !e["link"].is_object()) return 0;
    const nlohmann::json& l = e["link"];
    return l.contains("bandwidth_bits_per_s") ? l["bandwidth_bits_per_s"].get<double>() / 8e6 : 0;
  }

  // The entry's answer: N, what stops N + 1, and the cores one accelerator needs (from the
  // one-accelerator step: the profile's rate over the images/s one busy core gave).
  void answer(nlohmann::json& e, int held, int failed, int cap, const nlohmann::json& bound_step) {
    e["status"] = "ok";
    e["accelerators"] = held;
    if (failed == 0) {
      e["bound"] = "max";
      e["bound_detail"] =
          held < o_.max_accelerators
              ? fmt::format("the dataset holds a batch for at most {} accelerators", cap)
              : fmt::format("--max-accelerators {}", o_.max_accelerators);
    } else {
      e["bound"] = bound_step["bound"];
      e["bound_detail"] =
          fmt::format("at {} accelerator{}, least AU {:.0f}%", failed, failed == 1 ? "" : "s",
                      100 * bound_step["au_min"].get<double>());
    }
    for (const nlohmann::json& st : e["steps"])
      if (st["accelerators"] == 1) {
        const double cores =
            st["loader_cores_busy"].get<double>() + st["server_cores_busy"].get<double>();
        const double per_core = cores > 0 ? st["images_per_s"].get<double>() / cores : 0;
        e["images_per_s_per_core"] = per_core;
        e["cores_per_accelerator"] =
            per_core > 0 ? nlohmann::json(profile_.accelerator.images_per_s() / per_core) : nullptr;
      }
  }

  void print_step(size_t d, const QualifyStorage& s, QualifyMode m, const nlohmann::json& st) {
    std::string spread;
    for (const nlohmann::json& a : st["runs"]["au_min"])
      spread += fmt::format("{}{:.0f}", spread.empty() ? "" : " ", 100 * a.get<double>());
    fmt::print(
        "{:<10} {:<14} {:<6} {:>4} {:>6} {:>9.0f} {:>8.1f} {:>6.0f} {:>6.2f}  {}{}\n",
        short_name(roots_[d]), s.name, mode_name(m), st["accelerators"].get<int>(),
        st["held"].get<bool>() ? "yes" : "no", st["images_per_s"].get<double>(),
        st["read_mb_per_s"].get<double>(), 100 * st["au_min"].get<double>(),
        st["loader_cores_busy"].get<double>() + st["server_cores_busy"].get<double>(), spread,
        st.contains("not_enough_data") ? " (" + st["not_enough_data"].get<std::string>() + ")"
                                       : "");
    std::fflush(stdout);
  }

  void print_answers() {
    fmt::print("# accelerators fed (AU >= {:.0f}% each), {} at {:.0f} img/s:\n", 100 * kAuTarget,
               profile_.name, profile_.accelerator.images_per_s());
    for (const nlohmann::json& e : results_) {
      if (e["status"] != "ok") continue;
      std::string cores;
      if (e.contains("cores_per_accelerator") && !e["cores_per_accelerator"].is_null())
        cores = fmt::format("; one needs {:.1f} cores", e["cores_per_accelerator"].get<double>());
      fmt::print("#   {:<10} {:<14} {:<6} {:>3}{} ({}: {}{})\n", e["dataset"].get<std::string>(),
                 e["storage"].get<std::string>(), e["mode"].get<std::string>(),
                 e["accelerators"].get<int>(), e["bound"] == "max" ? "+" : "",
                 e["bound"].get<std::string>(), e["bound_detail"].get<std::string>(), cores);
    }
    fmt::print("# {:.0f} s ({} failed): {}/qualify.json, {}/report.html\n", (now_ns() - t0_) * 1e-9,
               failed_, o_.out, o_.out);
  }

  nlohmann::json document(const std::string& status) const {
    nlohmann::json ctx = machine_context();
    ctx["tool"] = "stoker qualify";
    ctx["version"] = STOKER_VERSION;
    ctx["date"] = date_;
    ctx["command"] = command_;
    ctx["status"] = status;
    ctx["accelerator"] = {{"name", profile_.name},
                          {"images_per_s", profile_.accelerator.images_per_s()},
                          {"from", profile_.from},
                          {"note", profile_.note}};
    ctx["au_target"] = kAuTarget;
    ctx["seconds"] = o_.seconds;
    ctx["repeats"] = o_.repeats;
    ctx["max_accelerators"] = o_.max_accelerators;
    ctx["reader"] = base_.reader.text();
    ctx["batch"] = base_.sampler.batch_size;
    ctx["prefetch"] = base_.prefetch;
    ctx["datasets"] = datasets_;
    ctx["machine_load"] = machine_load_json(load0_);
    ctx["libraries"] = library_versions();
    return {{"context", ctx}, {"results", results_}};
  }

  void write_result(const std::string& status) {
    write_result_and_report(o_.out, "qualify.json", document(status), render_qualify_report);
  }

  [[noreturn]] void stop(const std::string& why) {
    write_result("interrupted");
    exports_->stop_all();
    throw Interrupted(
        fmt::format("qualify {}: {}/qualify.json and {}/report.html hold the "
                    "finished steps",
                    why, o_.out, o_.out));
  }

  QualifyOptions& o_;
  std::vector<QualifyStorage> storages_;
  std::vector<QualifyMode> modes_;
  AcceleratorProfile profile_;
  LoaderConfig base_;
  std::vector<std::string> roots_;
  std::vector<std::unique_ptr<Index>> indexes_;
  std::vector<nlohmann::json> datasets_;
  std::map<std::string, std::unique_ptr<Index>> nfs_;  // "d@storage" -> its export's index
  std::set<std::string> warm_;                         // local roots read since an eviction
  std::unique_ptr<NfsExports> exports_;
  nlohmann::json results_ = nlohmann::json::array();
  size_t failed_ = 0;
  int64_t t0_ = now_ns();
  LoadMark load0_ = load_mark();
  std::string date_ = utc_now(), command_ = command_line();
};

}  // namespace

void add_qualify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "qualify",
      "How many accelerators this storage and these cores feed at AU >= 90% (MLPerf Storage's "
      "question), with real decode and read only, per dataset and storage (JSON + HTML report)");
  auto o = std::make_shared<QualifyOptions>();
  o->loader.batch = 32;
  o->loader.reader = fmt::format("threads:{}", std::max(1, online_cpus()));
  cmd->add_option("data", o->data,
                  "Local dataset roots, one per resolution (default: the built-in 256, 512 and "
                  "1024 px sets)");
  cmd->add_option("--storage", o->storages,
                  "Storages: local, local-cold, nfs (a local NFS-Ganesha on 127.0.0.1), "
                  "nfs@LINK (in a network namespace behind a veth pair: unshaped, 25gbit, 10gbit, "
                  "1gbit, any Ngbit or Nmbit)")
      ->capture_default_str();
  cmd->add_option("--accelerator", o->accelerator,
                  "What one accelerator computes: resnet50-h100 (MLPerf Storage's, 1,786 img/s), "
                  "a rate (6532img/s), T/N, or a `stoker train --json` file (its measured rate)")
      ->capture_default_str();
  cmd->add_option("--mode", o->modes, "decode (real decode), read (read only), or decode,read")
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds,
                  "Each accelerator's timed window at its full rate, per step of the search")
      ->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Runs of each step: its verdict is their median's")
      ->capture_default_str();
  cmd->add_option("--max-accelerators", o->max_accelerators, "The largest N tried")
      ->capture_default_str();
  cmd->add_option("--out", o->out,
                  "Result directory: qualify.json, report.html, NFS state (default "
                  "qualify-YYYYmmdd-HHMMSS); an existing result needs --force");
  cmd->add_flag("--force", o->force, "Replace the result already in --out");
  // The storage chooses the source and the caches; the mode decides --no-decode.
  o->loader.add_to(*cmd, {"--drop-last", "--source", "--null-file", "--direct", "--no-decode"});
  cmd->callback([o] { QualifyRun(*o).run(); });
}

}  // namespace stoker
