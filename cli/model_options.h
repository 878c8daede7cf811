// Options shared by the subcommands that load a model: -m, --threads, --ctx-size, --kv-type,
// --lora; and the chat template options of those that chat.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "engine/chat/template_selection.h"
#include "engine/lora/lora_adapter.h"
#include "engine/runtime/context.h"
#include "engine/runtime/kv_type.h"

namespace cellserve::cli {

struct ModelOptions {
  std::string model_path;
  int threads = 0;  // 0: one per physical core the process may use
  int64_t ctx_size = 4096;
  int64_t batch_size = 512;
  std::string kv_type = std::string(engine::kDefaultKvType);
  std::vector<std::string> lora;  // "FILE" or "FILE:SCALE", applied to every sequence
  std::string cpus;               // --cpus "0-3,6"; empty: the fastest cluster (big cores)

  // Registers the options on `cmd`.
  void add_to(CLI::App* cmd);
  // Loads the model and creates a context for `n_seq` sequences; errors name the option.
  Result<std::unique_ptr<engine::Context>> create_context(int n_seq = 1) const;
  // Loads the --lora adapters against `model` (empty set when none was given).
  Result<engine::LoraSet> load_lora(const engine::Model& model) const;
};

// Registers --cpus LIST on `cmd`, filling `cpus` (the commands with their own options: bench, agent).
void add_cpus_option(CLI::App* cmd, std::string* cpus);

// Pins this process's compute threads to `cpus_text` (--cpus) or, when empty, to a big.LITTLE
// CPU's performance cores (engine::pin_to_compute_cpus). Call it first in a command's callback,
// before any thread starts; the error names --cpus.
Status pin_compute_cpus(const std::string& cpus_text);

// Registers --chat-template-file FILE and --chat-template NAME on `cmd` (the subcommands that
// chat: serve, chat), filling `choice`; engine::chat::select_chat_template() applies it.
void add_chat_template_options(CLI::App* cmd, engine::chat::TemplateChoice* choice);

// Parses "1,2,3" (spaces allowed) into ids; InvalidArgument naming the bad item.
Result<std::vector<int32_t>> parse_token_list(const std::string& text);

}  // namespace cellserve::cli
