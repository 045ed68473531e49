// SPDX-License-Identifier: Apache-2.0
// stoker probe PATH: the storage ceiling for a dataset, measured on its own files through
// each reader with nothing decoded: whole files in a shuffled order (what a loader does)
// and in index order (sequential, directory by directory). The page cache is emptied of the
// dataset before each run unless --warm, so the figure is the storage's, not RAM's.
// --depth gives the source's own ceiling with 1 or N requests in flight, no reader at all.
// Local paths and nfs:// URLs print the same rows by default (issue 47), each naming its
// cache state: an nfs:// dataset cannot be cold (the page cache is the server's), so it is
// made warm, read once first, and the output says loudly it is not comparable to cold rows;
// unless --server-cold: the server runs on this machine (scripts/nfs_serve.sh, --netns or
// not) and its files are evicted here before each run, as a local dataset's are. Each row
// says which caches were cold: the client's (local page cache; libnfs keeps none) and the
// server's.
#include <fmt/format.h>

#include <charconv>

#include <fstream>
#include <memory>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/system_info.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/loader_stats.h"
#include "loader/sources/nfs_url.h"
#include "loader/sources/source.h"
#include "tools/bench/bench_common.h"
#include "tools/commands.h"
#include "tools/options/command_options.h"
#include "tools/options/loader_options.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"
#include "tools/probe/source_probe.h"

namespace stoker {

namespace {

struct ProbeOptions {
  std::string data;
  LoaderOptions loader;  // --reader and --direct, the loader's own rows
  std::string depths;
  size_t max_files = 0;
  bool warm = false;
  bool server_cold = false;
  std::string json;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(',', start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A cold measurement that is not cold must say so (as bench does).
void warn_not_evicted(size_t failed) {
  if (failed) fmt::print("# warning: {} files could not be evicted from the page cache\n", failed);
}

// The same default rows for every dataset, local or nfs://: the source alone at 1 and 32
// requests in flight, then each reader. With --direct, the readers O_DIRECT means something
// to (a reader given that is not uring is refused: tools/options/idle_rules.h).
void default_rows(ProbeOptions& o, int cpus) {
  if (!o.loader.reader.empty() || !o.depths.empty()) return;
  o.depths = "1,32";
  o.loader.reader = o.loader.direct ? fmt::format("uring:32:{}", cpus)
                                    : fmt::format("serial,threads:{},threads:{},uring:32:{}", cpus,
                                                  4 * cpus, cpus);
}

// The cache every row reads: "cold" (evicted before each run), "warm" (--warm: as found),
// or for nfs:// "warm" after reading every file once, since the server's cache cannot be
// evicted from here and would otherwise be in whatever state earlier reads left it; with
// --server-cold, "cold": the server's files are evicted here (server_cold_root).
// `evict_root` is set to the directory to evict before each run ("" for none).
std::string prepare_cache(ProbeOptions& o, const Index& index, bool nfs, std::string& evict_root) {
  if (!nfs) {
    if (!o.warm) evict_root = index.root;
    return o.warm ? "warm" : "cold";
  }
  if (o.server_cold) {
    evict_root = server_cold_root(index);
    fmt::print(
        "# nfs: the server's page cache is cold: its files under {} are evicted on this "
        "machine before each run (--server-cold); libnfs keeps no cache of its own\n",
        evict_root);
    return "cold";
  }
  o.warm = true;
  const int64_t t0 = now_ns();
  const WarmStats w = warm_page_cache(index);
  fmt::print(
      "# WARNING: nfs:// cannot be probed cold: the page cache is the NFS server's, not ours to "
      "evict (--server-cold evicts it where the server runs on this machine). Every file was "
      "read once first ({} files, {:.1f} MB in {:.2f} s), so these rows "
      "are WARM: compare them with `stoker probe --warm` of a local copy, not with a local "
      "probe's default (cold) rows\n",
      w.files, w.bytes / 1e6, (now_ns() - t0) * 1e-9);
  return "warm";
}

// Which caches a row read cold: the client's page cache (a local dataset's; libnfs has none:
// every read goes to the server) and the server's (an nfs:// dataset's; none for local).
nlohmann::json caches_json(bool nfs, const std::string& cache) {
  if (nfs) return {{"client", "none"}, {"server", cache}};
  return {{"client", cache}, {"server", "none"}};
}

void run_probe(ProbeOptions& o) {
  install_interrupt_handlers();
  check_writable("--json", o.json);
  const Index index = open_index(o.data);
  const int cpus = online_cpus();
  const bool nfs = is_nfs_url(index.root);
  const bool direct = o.loader.direct;
  const bool default_depths = o.loader.reader.empty() && o.depths.empty();
  if (o.server_cold && !nfs)
    usage_fail("--server-cold: {} is not an nfs:// dataset (its page cache is evicted anyway)",
               o.data);
  if (o.server_cold && o.warm) usage_fail("--server-cold and --warm contradict each other");
  default_rows(o, cpus);
  const std::string& reader_text = o.loader.reader;
  const std::vector<ReaderSpec> readers =
      reader_text.empty() ? std::vector<ReaderSpec>{} : parse_reader_list(reader_text);
  std::vector<uint32_t> depths;
  for (const std::string& d : split_list(o.depths)) {
    depths.push_back(static_cast<uint32_t>(std::stoul(d)));  // checked by the option
  }
  const uint64_t total = index.total_bytes();
  fmt::print("# stoker {} probe: {} ({} files, {:.1f} MB, mean {:.1f} KB)\n", STOKER_VERSION,
             o.data, index.size(), total / 1e6, index.size() ? total / 1e3 / index.size() : 0.0);
  fmt::print("# cpu: {}, {} online cpus; storage {}; page cache {}; O_DIRECT {}\n", cpu_model(),
             cpus, nfs ? "nfs" : "local",
             nfs && o.server_cold ? "the NFS server's, on this machine (evicted before each run)"
             : nfs                ? "the NFS server's (cannot be evicted from here; warmed below)"
             : o.warm             ? "warm (not evicted)"
                                  : "cold (evicted before each run)",
             direct ? "on" : "off");
  std::fflush(stdout);
  std::string evict_root;
  const std::string cache = prepare_cache(o, index, nfs, evict_root);
  const nlohmann::json caches = caches_json(nfs, cache);
  fmt::print("{:<7} {:<5} {:<11} {:<14} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "storage", "cache",
             "order", "reader", "files/s", "MB/s", "read50", "read99", "cores");
  fmt::print("{:<7} {:<5} {:<11} {:<14} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "", "", "", "", "", "",
             "ms", "ms", "");
  const std::string storage = nfs ? "nfs" : "local";
  std::fflush(stdout);
  nlohmann::json results = nlohmann::json::array();
  // Ctrl-C stops between runs, or inside a reader's run (that row is marked interrupted).
  for (const bool shuffled : {true, false}) {
    for (const uint32_t depth : depths) {
      if (interrupted()) break;
      if (!evict_root.empty()) warn_not_evicted(evict_from_page_cache(index, evict_root));
      SourceOptions so;
      so.direct = direct;
      SourceProbe p;
      try {
        p = probe_source(index, so, depth, shuffled, 0, o.max_files);
      } catch (const SourceBroken&) {
        throw;
      } catch (const Error& e) {
        if (!default_depths) throw;
        // A default row this source cannot give (no io_uring here, say): said, not fatal.
        fmt::print("# source qd{}: not measured: {}\n", depth, e.what());
        continue;
      }
      const char* order = shuffled ? "shuffled" : "sequential";
      fmt::print("{:<7} {:<5} {:<11} {:<14} {:>10.0f} {:>9.1f} {:>9.2f} {:>9.2f} {:>9.2f}\n",
                 storage, cache, order, fmt::format("{} qd{}", p.source, p.depth), p.files_per_s(),
                 p.mb_per_s(), p.latency.quantile_ns(0.5) / 1e6, p.latency.quantile_ns(0.99) / 1e6,
                 p.seconds > 0 ? p.cpu_seconds / p.seconds : 0.0);
      if (p.errors) fmt::print("# {} files could not be read\n", p.errors);
      nlohmann::json r = p.to_json();
      r["order"] = order;
      r["storage"] = storage;
      r["page_cache"] = cache;
      r["caches"] = caches;
      results.push_back(std::move(r));
      std::fflush(stdout);
    }
    for (const ReaderSpec& reader : readers) {
      if (interrupted()) break;
      if (!evict_root.empty()) warn_not_evicted(evict_from_page_cache(index, evict_root));
      LoaderConfig c;
      c.reader = reader;
      c.no_decode = true;
      c.source.direct = direct;
      c.sampler.shuffle = shuffled;
      c.sampler.batch_size = 64;
      c.prefetch = 4;
      c.transform.size = 8;  // nothing is decoded; keeps the unused batch tensors tiny
      c.warn = false;
      Iterator it(index, c);
      LoaderStats stats;
      const double cpu0 = process_cpu_seconds();
      const int64_t t0 = now_ns();
      it.start_epoch(0);
      while (const Batch* b = it.next()) {
        stats.add_batch(*b, 0);
        if (o.max_files && stats.images >= o.max_files) break;
        if (interrupted()) break;
      }
      stats.wall_ns = now_ns() - t0;
      stats.cpu_seconds = process_cpu_seconds() - cpu0;
      const char* order = shuffled ? "shuffled" : "sequential";
      fmt::print("{:<7} {:<5} {:<11} {:<14} {:>10.0f} {:>9.1f} {:>9.2f} {:>9.2f} {:>9.2f}\n",
                 storage, cache, order, reader.text(), stats.images_per_s(), stats.mb_per_s(),
                 stats.read.quantile_ns(0.5) / 1e6, stats.read.quantile_ns(0.99) / 1e6,
                 stats.cpu_seconds / (stats.wall_ns * 1e-9));
      nlohmann::json r = stats.to_json(it);
      r["order"] = order;
      r["storage"] = storage;
      r["page_cache"] = cache;
      r["caches"] = caches;
      if (interrupted()) r["interrupted"] = true;
      results.push_back(std::move(r));
      std::fflush(stdout);
    }
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    nlohmann::json context = machine_context();
    context.update({{"tool", "stoker probe"},
                    {"dataset", o.data},
                    {"files", index.size()},
                    {"bytes", total},
                    {"warm", o.warm},
                    {"storage", storage},
                    {"page_cache", cache},
                    {"caches", caches},
                    {"depths", o.depths},
                    {"direct", direct},
                    {"interrupted", interrupted()}});
    out << nlohmann::json{{"context", context}, {"results", results}}.dump(2) << "\n";
    if (!out) fail("--json {}: cannot write: {}", o.json, errno_text(errno));
  }
  if (interrupted())
    throw Interrupted(fmt::format("probe: interrupted; {} row(s) kept", results.size()));
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "probe", "Raw read bandwidth of a dataset's files through each reader (no decoding)");
  auto o = std::make_shared<ProbeOptions>();
  cmd->add_option("data", o->data,
                  "Dataset: ImageFolder root, list file, packed shards or nfs:// URL")
      ->required();
  o->loader.add_only(*cmd, {"--reader", "--direct"});
  cmd->add_option("--depth", o->depths,
                  "Comma-separated requests in flight for the source alone, no reader (e.g. "
                  "1,32; default 1,32 with the default readers; given alone, no reader runs "
                  "unless --reader)")
      ->check(each_parsed_by(
          [](const std::string& d) {
            uint64_t v = 0;
            const auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
            if (d.empty() || ec != std::errc() || end != d.data() + d.size() || v < 1 || v > 4096)
              fail("'{}': expected requests in flight, 1..4096, comma-separated", d);
          },
          "DEPTHS"));
  cmd->add_option("--max-files", o->max_files, "Stop each run after about this many files")
      ->check(integer_in(1));
  cmd->add_flag("--warm", o->warm, "Do not evict the files from the page cache first");
  cmd->add_flag("--server-cold", o->server_cold,
                "nfs:// only: the server runs on this machine and exports the URL's path as that "
                "same directory (scripts/nfs_serve.sh): evict its files here before each run, so "
                "the server reads its storage");
  add_command_option(*cmd, "--json", o->json, {"Write results as one JSON document"});
  cmd->callback([o] { run_probe(*o); });
}

}  // namespace stoker
