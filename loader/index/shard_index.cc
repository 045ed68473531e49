// SPDX-License-Identifier: Apache-2.0
#include "loader/index/shard_index.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <string_view>

#include "common/error.h"

namespace stoker {

namespace {

constexpr int kVersion = 1;

void refuse_separators(const std::string& s, const char* what, const std::string& file) {
  if (s.find_first_of("\t\n\r") != std::string::npos) {
    fail("{}: {} '{}' holds a tab or newline, which the shard index cannot store", file, what, s);
  }
}

// Splits a line at tabs into at most `max` fields; the last field takes the rest of the line.
std::vector<std::string_view> split_tabs(std::string_view line, size_t max) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < max) {
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) break;
    out.push_back(line.substr(0, tab));
    line.remove_prefix(tab + 1);
  }
  out.push_back(line);
  return out;
}

template <class T>
T number(std::string_view s, const std::string& file, size_t line_no, const char* what) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    fail("{}:{}: {} '{}' is not a non-negative integer", file, line_no, what, s);
  }
  return v;
}

}  // namespace

void ShardIndexFile::add(uint32_t sh, uint64_t off, uint64_t len, uint32_t lab,
                         const std::string& p) {
  shard.push_back(sh);
  offset.push_back(off);
  length.push_back(len);
  label.push_back(lab);
  name_offset.push_back(names.size());
  names.insert(names.end(), p.begin(), p.end());
  names.push_back('\0');
}

void write_shard_index(const ShardIndexFile& index, const std::string& file) {
  for (const auto& c : index.classes) refuse_separators(c, "class name", file);
  for (const auto& s : index.shards) refuse_separators(s.file, "shard name", file);
  const std::string partial = file + ".partial";
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    if (!f) fail("shard index {}: cannot create: {}", partial, errno_text(errno));
    f << kShardIndexMagic << '\t' << kVersion << '\t' << index.classes.size() << '\t'
      << index.shards.size() << '\t' << index.size() << '\n';
    for (const auto& c : index.classes) f << "class\t" << c << '\n';
    for (const auto& s : index.shards) f << "shard\t" << s.bytes << '\t' << s.file << '\n';
    for (size_t i = 0; i < index.size(); ++i) {
      const std::string_view p = index.path(i);
      if (p.find_first_of("\t\n\r") != std::string_view::npos) {
        f.close();
        unlink(partial.c_str());
        fail("{}: sample {} path '{}' holds a tab or newline", file, i, p);
      }
      f << index.shard[i] << '\t' << index.offset[i] << '\t' << index.length[i] << '\t'
        << index.label[i] << '\t' << p << '\n';
    }
    f.flush();
    if (!f) {
      const int e = errno;
      f.close();
      unlink(partial.c_str());
      fail("shard index {}: write failed: {}", partial, errno_text(e));
    }
  }
  const int fd = open(partial.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    unlink(partial.c_str());
    fail("shard index {}: fsync failed: {}", partial, errno_text(e));
  }
  close(fd);
  if (rename(partial.c_str(), file.c_str()) != 0) {
    const int e = errno;
    unlink(partial.c_str());
    fail("shard index {}: cannot rename into place: {}", file, errno_text(e));
  }
}

bool is_shard_index(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  char head[14] = {};
  f.read(head, sizeof head);
  return f.gcount() == sizeof head && std::string_view(head, 13) == kShardIndexMagic &&
         head[13] == '\t';
}

ShardIndexFile read_shard_index(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("shard index '{}': {}", file, errno_text(errno));
  return parse_shard_index(in, file);
}

ShardIndexFile parse_shard_index(std::istream& in, const std::string& file) {
  std::string line;
  size_t line_no = 0;
  auto next_line = [&](const char* expected) {
    if (!std::getline(in, line)) {
      fail("{}: ends at line {}; expected {} (a truncated index? pack again)", file, line_no,
           expected);
    }
    ++line_no;
  };
  next_line("the header");
  const auto head = split_tabs(line, 5);
  if (head.size() != 5 || head[0] != kShardIndexMagic) {
    fail(
        "{}: not a shard index (expected a first line '{}<TAB>{}<TAB>classes<TAB>shards<TAB>"
        "samples')",
        file, kShardIndexMagic, kVersion);
  }
  const int version = number<int>(head[1], file, line_no, "version");
  if (version != kVersion) {
    fail("{}: shard index version {}; this stoker reads version {}", file, version, kVersion);
  }
  const auto n_classes = number<size_t>(head[2], file, line_no, "class count");
  const auto n_shards = number<size_t>(head[3], file, line_no, "shard count");
  const auto n_samples = number<size_t>(head[4], file, line_no, "sample count");
  ShardIndexFile index;
  for (size_t c = 0; c < n_classes; ++c) {
    next_line("a 'class' line");
    const auto f = split_tabs(line, 2);
    if (f.size() != 2 || f[0] != "class") fail("{}:{}: expected 'class<TAB>name'", file, line_no);
    index.classes.emplace_back(f[1]);
  }
  for (size_t s = 0; s < n_shards; ++s) {
    next_line("a 'shard' line");
    const auto f = split_tabs(line, 3);
    if (f.size() != 3 || f[0] != "shard" || f[2].empty()) {
      fail("{}:{}: expected 'shard<TAB>bytes<TAB>file'", file, line_no);
    }
    index.shards.push_back({std::string(f[2]), number<uint64_t>(f[1], file, line_no, "bytes")});
  }
  index.shard.reserve(n_samples);
  index.offset.reserve(n_samples);
  index.length.reserve(n_samples);
  index.label.reserve(n_samples);
  index.name_offset.reserve(n_samples);
  for (size_t i = 0; i < n_samples; ++i) {
    next_line("a sample line");
    const auto f = split_tabs(line, 5);
    if (f.size() != 5) {
      fail("{}:{}: expected 'shard<TAB>offset<TAB>length<TAB>label<TAB>path'", file, line_no);
    }
    const auto sh = number<uint32_t>(f[0], file, line_no, "shard");
    const auto off = number<uint64_t>(f[1], file, line_no, "offset");
    const auto len = number<uint64_t>(f[2], file, line_no, "length");
    const auto lab = number<uint32_t>(f[3], file, line_no, "label");
    if (sh >= n_shards) fail("{}:{}: shard {} of {}", file, line_no, sh, n_shards);
    if (lab >= n_classes) fail("{}:{}: label {} of {} classes", file, line_no, lab, n_classes);
    if (off > index.shards[sh].bytes || len > index.shards[sh].bytes - off) {
      fail("{}:{}: bytes [{}, {}) lie outside shard '{}' of {} bytes", file, line_no, off,
           off + len, index.shards[sh].file, index.shards[sh].bytes);
    }
    index.add(sh, off, len, lab, std::string(f[4]));
  }
  if (std::getline(in, line)) {
    fail("{}:{}: more lines than the {} samples the header counts", file, line_no + 1, n_samples);
  }
  return index;
}

}  // namespace stoker
