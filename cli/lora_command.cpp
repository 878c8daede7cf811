// `cellserve lora merge`: write a GGUF model with LoRA adapters merged into its weights
// (engine/lora/lora_merge.h, docs/lora_merge.md).
//
//   cellserve lora merge --base qwen3-0.6b-f16.gguf --adapter risk.gguf:0.8 --out merged.gguf
//   cellserve lora merge --base base.gguf --adapter a.gguf --adapter b.gguf:0.5 --type Q4_K_M --out m.gguf
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/gguf/file_type.h"
#include "engine/lora/lora_merge.h"

namespace cellserve::cli {
namespace {

struct MergeArgs {
  std::string base;
  std::vector<std::string> adapters;
  std::string out;
  std::string type;
  int threads = 0;
};

int lora_failed(const std::string& message) {
  print_error("lora merge", message);
  return 1;
}

// Runs the command; returns the exit status (0 ok, 1 on any error).
int run_merge(const MergeArgs& a) {
  if (a.base.empty() || a.adapters.empty() || a.out.empty())
    return lora_failed("--base, --adapter and --out are required");
  std::vector<engine::LoraArg> adapters;
  for (const std::string& text : a.adapters) {
    auto arg = engine::parse_lora_arg(text);
    if (!arg.ok()) {
      std::string message = arg.status().message();  // parse_lora_arg names serve's flag, --lora
      if (message.rfind("--lora ", 0) == 0) message.replace(0, 6, "--adapter");
      return lora_failed(message);
    }
    adapters.push_back(*arg);
  }
  engine::MergeOptions options;
  options.type = a.type;
  options.n_threads = a.threads;
  const bool show_progress = ::isatty(STDERR_FILENO) != 0;
  if (show_progress) {
    options.progress = [](size_t i, size_t n, const std::string& name) {
      std::fprintf(stderr, "\r[%4zu/%4zu] %-48s", i + 1, n, name.c_str());
      std::fflush(stderr);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  auto summary = engine::merge_lora(a.base, adapters, options, a.out);
  if (show_progress) std::fprintf(stderr, "\r%70s\r", "");
  if (!summary.ok()) return lora_failed(summary.status().message());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string file_type(engine::file_type_name(summary->file_type).value_or("unknown file type"));
  std::printf("wrote %s: %zu tensors, %zu adapted by %zu adapter%s, %zu re-encoded, %s (%.1f s)\n", a.out.c_str(),
              summary->n_tensors, summary->n_adapted, adapters.size(), adapters.size() == 1 ? "" : "s",
              summary->n_converted, file_type.c_str(), secs);
  return 0;
}

}  // namespace

void add_lora_command(CLI::App& app, int* exit_code) {
  auto* lora = app.add_subcommand("lora", "Work with LoRA adapters");
  lora->require_subcommand(1);
  auto* merge = lora->add_subcommand("merge", "Merge LoRA adapters into a base model and write a new GGUF file");
  auto args = std::make_shared<MergeArgs>();
  std::string types;
  for (std::string_view t : engine::merge_type_names()) {
    if (!types.empty()) types += ", ";
    types += t;
  }
  merge->add_option("--base", args->base, "Base model GGUF file");
  merge->add_option("--adapter", args->adapters,
                    "LoRA adapter FILE[:SCALE] (scale 1 by default); repeat for several, applied in the order given");
  merge->add_option("--out", args->out, "Output GGUF file");
  merge->add_option("--type", args->type,
                    "Re-encode every tensor as llama-quantize would for this type: " + types +
                        " (default: adapted tensors keep their types, the others are copied)");
  merge->add_option("--threads", args->threads, "Worker threads (default: all cores)");
  merge->callback([=] { *exit_code = run_merge(*args); });
}

}  // namespace cellserve::cli
