// SPDX-License-Identifier: Apache-2.0
// List files: "relative/path label" per line. The label is the last whitespace-separated
// field, so paths may contain spaces. Sizes come from stat, in parallel.
#include <sys/stat.h>

#include <tbb/parallel_for.h>

#include <charconv>
#include <fstream>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/index/index_nfs.h"

namespace stoker {

namespace {

// A line as an error message may quote it: control and non-ASCII bytes as \xNN, cut at 80
// characters, so that a binary file given as a list does not print raw bytes.
std::string quotable(std::string_view line) {
  std::string out;
  for (const char ch : line.substr(0, 80)) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7f) {
      out += ch;
    } else {
      out += fmt::format("\\x{:02x}", b);
    }
  }
  if (line.size() > 80) out += "...";
  return out;
}

// Whether `line` is UTF-8 without control characters (tabs allowed).
bool is_text(std::string_view line) {
  for (size_t i = 0; i < line.size();) {
    const auto b = static_cast<unsigned char>(line[i]);
    if (b < 0x80) {
      if (b < 0x20 && b != '\t') return false;
      ++i;
      continue;
    }
    const size_t n = b >= 0xf0 && b < 0xf5 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
    if (n == 0 || i + n > line.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(line[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

// Labels index the class list, which gets one entry per label up to the largest: a label of
// 4e9 would ask for 4e9 class names. ImageNet-21k has 21,841 classes; 2^20 leaves room.
constexpr uint32_t kMaxLabel = (1u << 20) - 1;

// A comment "# class <label> <name>" (as `stoker index --out` writes them) names a class, so
// a list file keeps the ImageFolder's class names; other comments are ignored.
void read_class_name(const std::string& line, const std::string& list_file, size_t line_no,
                     std::vector<std::string>& names) {
  constexpr std::string_view kTag = "# class ";
  if (!line.starts_with(kTag)) return;
  const size_t sep = line.find(' ', kTag.size());
  uint32_t label = 0;
  const char* begin = line.data() + kTag.size();
  const char* end = sep == std::string::npos ? line.data() + line.size() : line.data() + sep;
  const auto [at, ec] = std::from_chars(begin, end, label);
  if (ec != std::errc() || at != end || sep == std::string::npos || sep + 1 == line.size() ||
      label > kMaxLabel)
    fail("{}:{}: expected '# class <label> <name>', found '{}'", list_file, line_no,
         quotable(line));
  if (names.size() <= label) names.resize(size_t(label) + 1);
  names[label] = line.substr(sep + 1);
}

}  // namespace

Index parse_list_file(std::istream& in, const std::string& list_file, std::string root) {
  Index index;
  index.root = std::move(root);
  std::string line;
  size_t line_no = 0;
  uint32_t max_label = 0;
  std::vector<std::string> names;  // from `# class <label> <name>` lines
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Control bytes (NUL above all) or bytes that are not UTF-8 are never in a list: this
    // is an image, an archive, a checkpoint...
    if (!is_text(line))
      fail(
          "'{}' is not a list file (line {} holds binary data): expected an ImageFolder "
          "directory, a packed dataset, or a text file of 'relative/path label' lines",
          list_file, line_no);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == '#') {
      read_class_name(line, list_file, line_no, names);
      continue;
    }
    const size_t last = line.find_last_not_of(" \t");
    const size_t sep = line.find_last_of(" \t", last);
    if (sep == std::string::npos || sep < first) {
      fail("{}:{}: expected 'relative/path label', found '{}'", list_file, line_no, quotable(line));
    }
    const std::string_view label_text(line.data() + sep + 1, last - sep);
    uint32_t label = 0;
    const auto [end, ec] = std::from_chars(label_text.begin(), label_text.end(), label);
    if (ec != std::errc() || end != label_text.end()) {
      fail("{}:{}: label '{}' is not a non-negative integer", list_file, line_no,
           quotable(label_text));
    }
    if (label > kMaxLabel) {
      fail("{}:{}: label {} is larger than the largest supported, {}", list_file, line_no, label,
           kMaxLabel);
    }
    const size_t path_end = line.find_last_not_of(" \t", sep);
    // The index keeps paths NUL-terminated: one with a NUL inside would name another file.
    if (line.find('\0', first) <= path_end) {
      fail("{}:{}: the path contains a NUL byte (a binary file, not a list file?)", list_file,
           line_no);
    }
    index.add(std::string_view(line.data() + first, path_end - first + 1), 0, label);
    max_label = std::max(max_label, label);
  }
  if (index.size() == 0) fail("list file '{}' lists no samples", list_file);
  // Labels without a `# class` line are named by their number.
  const size_t count = std::max<size_t>(size_t(max_label) + 1, names.size());
  for (size_t c = 0; c < count; ++c)
    index.classes.push_back(c < names.size() && !names[c].empty() ? names[c] : std::to_string(c));
  return index;
}

Index index_list_file(const std::string& list_file, const std::string& root_in) {
  std::ifstream in(list_file);
  if (!in) fail("list file '{}': {}", list_file, errno_text(errno));
  std::string root = root_in;
  if (root.empty()) {
    const size_t slash = list_file.rfind('/');
    root = slash == std::string::npos ? "." : list_file.substr(0, slash);
  }
  Index index = parse_list_file(in, list_file, std::move(root));

  // Missing files are an error here, naming the line: a list is a promise about the tree.
  std::vector<int> missing_errno(index.size(), 0);
  tbb::parallel_for(size_t{0}, index.size(), [&](size_t i) {
    struct stat st {};
    if (stat(index.path(i).c_str(), &st) != 0) {
      missing_errno[i] = errno;
    } else {
      index.bytes[i] = static_cast<uint64_t>(st.st_size);
    }
  });
  for (size_t i = 0; i < index.size(); ++i) {
    if (missing_errno[i]) {
      fail("list file '{}': sample {} '{}': {}", list_file, i, index.path(i),
           errno_text(missing_errno[i]));
    }
  }
  return index;
}

}  // namespace stoker
