// SPDX-License-Identifier: Apache-2.0
// stoker index: index a dataset, report how long it took and how compact it is, and
// optionally write it out as a list file (freezing the sample order and labels).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/clock.h"
#include "common/error.h"
#include "loader/index/index.h"
#include "loader/sources/nfs_url.h"
#include "tools/commands.h"
#include "tools/output_check.h"

namespace stoker {

void add_index_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("index", "Index a dataset; report time and bytes per entry");
  auto data = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("data", *data,
                  "Dataset: ImageFolder root, list file, packed shards or nfs:// URL")
      ->required();
  cmd->add_option("--out", *out,
                  "Write the index as a list file ('path label' lines, paths relative to the "
                  "list file's directory, after '# class <label> <name>' lines)");
  cmd->callback([data, out] {
    check_writable("--out", *out);
    const int64_t t0 = now_ns();
    const Index index = open_index(*data);
    const double secs = (now_ns() - t0) * 1e-9;
    const double n = index.size() ? static_cast<double>(index.size()) : 1.0;
    fmt::print(
        "{}: {} samples, {} classes, {:.1f} MB of files; indexed in {:.3f} s ({:.2f} us "
        "per entry), {:.1f} bytes per entry in memory\n",
        *data, index.size(), index.classes.size(), index.total_bytes() / 1e6, secs, secs * 1e6 / n,
        index.memory_bytes() / n);
    if (!index.empty_classes.empty()) {
      fmt::print("warning: {} class directories hold no image: {}{}\n", index.empty_classes.size(),
                 index.empty_classes.front(), index.empty_classes.size() > 1 ? ", ..." : "");
    }
    if (!out->empty()) {
      // List files are read relative to their own directory: write paths that way.
      namespace fs = std::filesystem;
      const fs::path list_dir = fs::absolute(*out).parent_path();
      // An nfs:// dataset: paths relative to its root, for a list file placed there.
      std::string prefix =
          is_nfs_url(index.root)
              ? "."
              : fs::relative(fs::absolute(index.root), list_dir).lexically_normal().string();
      prefix = prefix == "." ? "" : prefix + "/";
      std::ofstream f(*out);
      // The class names, so that a model trained on the list is checked against the folder.
      for (size_t c = 0; c < index.classes.size(); ++c)
        f << "# class " << c << ' ' << index.classes[c] << '\n';
      for (size_t i = 0; i < index.size(); ++i) {
        f << prefix << index.relative_path(i) << ' ' << index.label[i] << '\n';
      }
      if (!f) fail("--out {}: cannot write: {}", *out, errno_text(errno));
    }
  });
}

}  // namespace stoker
