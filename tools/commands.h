// SPDX-License-Identifier: Apache-2.0
// Each subcommand registers itself on the `stoker` app; its callback does the work and
// throws stoker::Error for bad input, which main maps to exit code 1.
#pragma once

#include <CLI/CLI.hpp>

namespace stoker {

void add_gen_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_peek_command(CLI::App& app);
void add_index_command(CLI::App& app);
void add_pack_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_model_command(CLI::App& app);
void add_checkpoint_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_study_command(CLI::App& app);
void add_qualify_command(CLI::App& app);

}  // namespace stoker
