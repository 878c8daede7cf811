// The `cellserve` subcommands. Each file cli/<name>_command.cpp defines one add_<name>_command,
// which registers its options on `app` and, when the subcommand runs, stores the process exit
// status in `*exit_code` (0 on success; errors print one line to stderr first).
#pragma once

#include <CLI/CLI.hpp>

namespace cellserve::cli {

void add_inspect_command(CLI::App& app, int* exit_code);
void add_synth_command(CLI::App& app, int* exit_code);
void add_run_command(CLI::App& app, int* exit_code);
void add_logits_command(CLI::App& app, int* exit_code);
void add_template_command(CLI::App& app, int* exit_code);
void add_tokenize_command(CLI::App& app, int* exit_code);
void add_chat_command(CLI::App& app, int* exit_code);
void add_bench_command(CLI::App& app, int* exit_code);
void add_serve_command(CLI::App& app, int* exit_code);
void add_lora_command(CLI::App& app, int* exit_code);
void add_pull_command(CLI::App& app, int* exit_code);
void add_hub_command(CLI::App& app, int* exit_code);
// `hub migrate-store`: registered by add_hub_command on its subcommand.
void add_hub_migrate_store_command(CLI::App& hub_cmd, int* exit_code);
void add_agent_command(CLI::App& app, int* exit_code);
void add_deploy_command(CLI::App& app, int* exit_code);  // deploy + deployments
void add_fleet_command(CLI::App& app, int* exit_code);
// `fleet release` and `deployments canaries`: after add_fleet_command and add_deploy_command.
void add_spot_check_commands(CLI::App& app, int* exit_code);
void add_market_command(CLI::App& app, int* exit_code);
void add_keys_command(CLI::App& app, int* exit_code);
void add_verify_command(CLI::App& app, int* exit_code);
void add_batch_command(CLI::App& app, int* exit_code);
void add_up_command(CLI::App& app, int* exit_code);

// Prints "cellserve <command>: error: <message>" on stderr.
void print_error(const std::string& command, const std::string& message);

}  // namespace cellserve::cli
