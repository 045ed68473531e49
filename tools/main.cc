// SPDX-License-Identifier: Apache-2.0
// `stoker`: parse, run, map errors to exit codes (0 ok, 1 failure, 2 usage).
#include <csignal>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/interrupt.h"
#include "tools/commands.h"
#include "tools/options/idle_options.h"
#include "tools/usage_hint.h"

int main(int argc, char** argv) {
  // Writing past a file-size limit should be an error (EFBIG) that names the checkpoint,
  // not a kill by SIGXFSZ that leaves a temporary file behind.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"stoker: keeps an accelerator fed, and measures every stage"};
  app.set_version_flag("--version", "stoker " STOKER_VERSION);
  app.require_subcommand(1);
  stoker::add_gen_command(app);
  stoker::add_bench_command(app);
  stoker::add_peek_command(app);
  stoker::add_index_command(app);
  stoker::add_pack_command(app);
  stoker::add_probe_command(app);
  stoker::add_model_command(app);
  stoker::add_checkpoint_command(app);
  stoker::add_train_command(app);
  stoker::add_eval_command(app);
  stoker::add_report_command(app);
  stoker::add_study_command(app);
  stoker::add_qualify_command(app);
  // One rule set for every subcommand: options idle in the combination given are refused
  // after parsing, before the command runs.
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->parse_complete_callback([sub] { stoker::refuse_idle_options(*sub); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // CLI11's own messages ("The following arguments were not expected") as ours, with the
    // nearest name for a mistyped subcommand or option.
    const std::string hint = stoker::usage_hint(app, argc, argv);
    std::fprintf(stderr, "stoker: usage error: %s\n%s%sRun with --help for more information.\n",
                 e.what(), hint.c_str(), hint.empty() ? "" : "\n");
    return 2;
  } catch (const stoker::Interrupted& e) {
    // What was finished has been written; the handler already said so on stderr.
    std::fprintf(stderr, "stoker: %s\n", e.what());
    return stoker::interrupt_exit_code();
  } catch (const stoker::UsageError& e) {
    // The same exit code and hint as CLI11's own parse errors.
    std::fprintf(stderr, "stoker: usage error: %s\nRun with --help for more information.\n",
                 e.what());
    return 2;
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "stoker: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoker: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
