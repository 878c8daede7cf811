// cellserve: one binary, one subcommand per concern (see cli/commands.h).
#include <cstdio>

#include "cli/commands.h"

namespace cellserve::cli {

void print_error(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "cellserve %s: error: %s\n", command.c_str(), message.c_str());
}

}  // namespace cellserve::cli

int main(int argc, char** argv) {
  CLI::App app{"cellserve: run LLMs from GGUF files on CPU devices"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cellserve 0.1.0");
  int exit_code = 0;
  cellserve::cli::add_inspect_command(app, &exit_code);
  cellserve::cli::add_synth_command(app, &exit_code);
  cellserve::cli::add_run_command(app, &exit_code);
  cellserve::cli::add_logits_command(app, &exit_code);
  cellserve::cli::add_template_command(app, &exit_code);
  cellserve::cli::add_tokenize_command(app, &exit_code);
  cellserve::cli::add_chat_command(app, &exit_code);
  cellserve::cli::add_bench_command(app, &exit_code);
  cellserve::cli::add_serve_command(app, &exit_code);
  cellserve::cli::add_lora_command(app, &exit_code);
  cellserve::cli::add_pull_command(app, &exit_code);
  cellserve::cli::add_hub_command(app, &exit_code);
  cellserve::cli::add_agent_command(app, &exit_code);
  cellserve::cli::add_deploy_command(app, &exit_code);
  cellserve::cli::add_fleet_command(app, &exit_code);
  cellserve::cli::add_spot_check_commands(app, &exit_code);
  cellserve::cli::add_market_command(app, &exit_code);
  cellserve::cli::add_keys_command(app, &exit_code);
  cellserve::cli::add_verify_command(app, &exit_code);
  cellserve::cli::add_batch_command(app, &exit_code);
  cellserve::cli::add_up_command(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
