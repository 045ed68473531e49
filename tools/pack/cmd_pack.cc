// SPDX-License-Identifier: Apache-2.0
// stoker pack DATA --out DIR: pack a dataset into tar shards plus an offset index
// (tools/pack/pack_shards.h does the work; this file is the command line).
#include <fmt/format.h>

#include <memory>

#include "tools/commands.h"
#include "tools/output_check.h"
#include "tools/pack/pack_shards.h"

namespace stoker {

void add_pack_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "pack", "Pack a dataset into WebDataset-compatible tar shards plus an offset index");
  auto c = std::make_shared<PackConfig>();
  cmd->add_option("data", c->data,
                  "Dataset: ImageFolder directory or list file (with --list: the list's root)")
      ->required();
  cmd->add_option("--out", c->out, "Output directory for shard-NNNNNN.tar and the index")
      ->required();
  cmd->add_option("--shard-size", c->shard_size,
                  "Largest shard (a sample never spans two): bytes, or with a unit (256MB, 1GiB)")
      ->transform(CLI::AsSizeValue(true))
      ->default_str("256MB");
  cmd->add_option("--list", c->list, "A list file ('path label' lines) relative to DATA");
  cmd->add_flag("--force", c->force, "Replace a packed dataset already in --out");
  cmd->add_flag_callback(
      "--no-progress", [c] { c->progress = false; }, "No progress line on stderr");
  cmd->callback([c] {
    check_writable_dir("--out", c->out);
    const PackResult r = pack_shards(*c);
    fmt::print(
        "{}: {} samples into {} shards, {:.1f} MB read, {:.1f} MB written in {:.2f} s "
        "({:.0f} img/s, {:.1f} MB/s); index {}\n",
        c->out, r.samples, r.shards, r.bytes_in / 1e6, r.bytes_out / 1e6, r.seconds,
        r.samples / std::max(r.seconds, 1e-9), r.bytes_in / 1e6 / std::max(r.seconds, 1e-9),
        r.index_file);
  });
}

}  // namespace stoker
