// SPDX-License-Identifier: Apache-2.0
#include "tools/pack/pack_shards.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <regex>

#include "common/clock.h"
#include "common/error.h"
#include "common/progress.h"
#include "loader/index/index.h"
#include "loader/index/shard_index.h"
#include "loader/sources/source.h"
#include "loader/sources/tar_writer.h"

namespace fs = std::filesystem;

namespace stoker {

namespace {

// The member extension: the original one, lower-case (".JPEG" -> "jpeg"), as WebDataset
// dispatches decoders on it.
std::string extension_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash) ||
      dot + 1 == path.size()) {
    return "img";
  }
  std::string ext(path.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::string shard_name(size_t i) {
  return fmt::format("shard-{:06d}.tar", i);
}

// Shards and index files a previous pack left; a new pack refuses to mix with them.
std::vector<fs::path> previous_output(const fs::path& dir) {
  static const std::regex kShard(R"(shard-[0-9]{6,}\.tar)");
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == kShardIndexName || std::regex_match(name, kShard)) found.push_back(e.path());
  }
  if (ec) fail("--out {}: cannot list: {}", dir.string(), ec.message());
  return found;
}

}  // namespace

std::string shard_key(uint64_t i) {
  return fmt::format("{:09d}", i);
}

PackResult pack_shards(const PackConfig& c) {
  if (c.shard_size < 2 * kTarBlock)
    usage_fail(
        "--shard-size {} is too small: at least {} bytes (a tar header and a block), and a shard "
        "must hold the largest sample",
        c.shard_size, 2 * kTarBlock);
  const int64_t t0 = now_ns();
  const Index index = c.list.empty() ? open_index(c.data) : index_list_file(c.list, c.data);
  if (index.size() == 0) fail("{}: no samples to pack", c.data);

  std::error_code ec;
  fs::create_directories(c.out, ec);
  if (ec) fail("--out {}: cannot create: {}", c.out, ec.message());
  const std::vector<fs::path> old = previous_output(c.out);
  if (!old.empty() && !c.force) {
    usage_fail("--out {} already holds a packed dataset ({}); pass --force to replace it", c.out,
               old.front().filename().string());
  }

  ShardIndexFile out;
  out.classes = index.classes;
  PackResult r;
  Progress progress("pack", index.size(), "img", c.progress);
  std::unique_ptr<TarWriter> tar;
  auto close_shard = [&] {
    if (!tar) return;
    tar->finish();
    out.shards.push_back({shard_name(out.shards.size()), tar->bytes()});
    r.bytes_out += out.shards.back().bytes;
    tar.reset();
  };
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < index.size(); ++i) {
    const std::span<const uint8_t> bytes = read_file(index.path(i), buf);
    const std::string key = shard_key(i);
    const std::string label = std::to_string(index.label[i]);
    const uint64_t need = tar_member_bytes(bytes.size()) + tar_member_bytes(label.size());
    // A sample never spans shards; an oversized one gets a shard of its own.
    if (tar && tar->bytes() + need + 2 * kTarBlock > c.shard_size) close_shard();
    if (!tar) {
      tar = std::make_unique<TarWriter>((fs::path(c.out) / shard_name(out.shards.size())).string());
    }
    const uint64_t offset = tar->add(key + "." + extension_of(index.relative_path(i)), bytes);
    tar->add(key + ".cls", {reinterpret_cast<const uint8_t*>(label.data()), label.size()});
    out.add(static_cast<uint32_t>(out.shards.size()), offset, bytes.size(), index.label[i],
            std::string(index.relative_path(i)));
    r.bytes_in += bytes.size();
    progress.add(1, bytes.size());
  }
  close_shard();
  progress.finish();
  r.index_file = (fs::path(c.out) / kShardIndexName).string();
  write_shard_index(out, r.index_file);
  // --force: shards of the old pack past the new count would confuse a reader of the folder.
  for (const auto& p : old) {
    const std::string name = p.filename().string();
    if (name == kShardIndexName) continue;
    const bool ours = std::any_of(out.shards.begin(), out.shards.end(),
                                  [&](const auto& s) { return s.file == name; });
    if (!ours) fs::remove(p, ec);
  }
  r.samples = index.size();
  r.shards = out.shards.size();
  r.seconds = (now_ns() - t0) * 1e-9;
  return r;
}

}  // namespace stoker
