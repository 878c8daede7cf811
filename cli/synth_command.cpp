// `cellserve synth`: write a random-weight GGUF model with the exact structure of a real
// architecture (see engine/synth/synth.h and docs/synth.md).
//
//   cellserve synth --arch qwen35 --shape qwen35-9b --type Q4_K_M --seed 7 --out q9.gguf
//   cellserve synth --list-shapes [--arch qwen3]
//   cellserve synth --lora-for base.gguf --rank 16 --out adapter.gguf
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "engine/synth/presets.h"
#include "engine/synth/synth.h"
#include "engine/synth/synth_lora.h"

namespace cellserve::cli {
namespace {

namespace synth = engine::synth;

struct SynthArgs {
  std::string arch;
  std::string shape;
  std::string type = "F32";
  uint64_t seed = 1;
  std::string out;
  int threads = 0;
  bool list_shapes = false;
  bool quiet = false;
  std::string lora_for;  // write a random LoRA adapter for this base model instead
  int64_t rank = 16;
  float alpha = 32.0f;
  std::string lora_targets;  // comma-separated; empty: the default set
};

void list_shapes(const std::string& only_arch) {
  std::printf("%-8s %-14s %7s %6s %9s %7s %8s  %s\n", "arch", "shape", "n_embd", "layers", "heads", "n_ff", "vocab",
              "source");
  for (synth::Arch arch : synth::all_archs()) {
    if (!only_arch.empty() && synth::arch_name(arch) != only_arch) continue;
    for (const auto& s : synth::presets_for(arch)) {
      const std::string heads =
          std::to_string(s.n_head) + "/" + std::to_string(s.n_head_kv) + "x" + std::to_string(s.head_dim);
      std::printf("%-8s %-14s %7lld %6lld %9s %7lld %8lld  %s\n", std::string(synth::arch_name(arch)).c_str(),
                  s.preset.c_str(), static_cast<long long>(s.n_embd), static_cast<long long>(s.n_layer), heads.c_str(),
                  static_cast<long long>(s.n_ff), static_cast<long long>(s.vocab.n_vocab), s.source.c_str());
    }
  }
  std::printf("types: F32 F16 BF16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K\n");
}

int synth_failed(const std::string& message, int code) {
  print_error("synth", message);
  return code;
}

int run_synth_lora(const SynthArgs& a) {
  if (a.out.empty()) return synth_failed("--out is required", 2);
  auto base = engine::GgufFile::open(a.lora_for);
  if (!base.ok()) return synth_failed(base.status().message(), 2);
  synth::LoraSynthRequest request;
  request.rank = a.rank;
  request.alpha = a.alpha;
  const auto type = engine::ggml_type_from_name(a.type);
  if (!type) return synth_failed("--type " + a.type + ": expected F32, F16, BF16 or Q8_0 for an adapter", 2);
  request.type = *type;
  if (!a.lora_targets.empty()) {
    request.targets.clear();
    size_t start = 0;
    while (start <= a.lora_targets.size()) {
      const size_t comma = std::min(a.lora_targets.find(',', start), a.lora_targets.size());
      if (comma > start) request.targets.push_back(a.lora_targets.substr(start, comma - start));
      start = comma + 1;
    }
  }
  synth::WriteOptions options;
  options.seed = a.seed;
  options.n_threads = a.threads;
  auto writer = synth::make_lora_writer(*base, request, options);
  if (!writer.ok()) return synth_failed(writer.status().message(), 2);
  if (Status st = writer->write(a.out); !st.ok()) return synth_failed(st.message(), 1);
  std::printf("wrote %s: LoRA adapter for %s, rank %lld, alpha %g, %zu tensors, seed %llu\n", a.out.c_str(),
              a.lora_for.c_str(), static_cast<long long>(a.rank), static_cast<double>(a.alpha), writer->tensor_count(),
              static_cast<unsigned long long>(a.seed));
  return 0;
}

// Runs the command; returns the exit status (0 ok, 2 bad arguments, 1 failure while writing).
int run_synth(const SynthArgs& a) {
  if (a.list_shapes) {
    if (!a.arch.empty()) {
      auto arch = synth::arch_from_name(a.arch);
      if (!arch.ok()) return synth_failed(arch.status().message(), 2);
    }
    list_shapes(a.arch);
    return 0;
  }
  if (!a.lora_for.empty()) return run_synth_lora(a);
  if (a.arch.empty() || a.shape.empty() || a.out.empty()) {
    return synth_failed("--arch, --shape and --out are required (or use --list-shapes)", 2);
  }
  auto arch = synth::arch_from_name(a.arch);
  if (!arch.ok()) return synth_failed(arch.status().message(), 2);
  auto type = synth::synth_type_from_name(a.type);
  if (!type.ok()) return synth_failed(type.status().message(), 2);
  auto plan = synth::plan_model({*arch, a.shape, *type});
  if (!plan.ok()) return synth_failed(plan.status().message(), 2);

  synth::WriteOptions options;
  options.seed = a.seed;
  options.n_threads = a.threads;
  if (!a.quiet) {
    options.progress = [](size_t i, size_t n, const synth::PlannedTensor& t) {
      std::fprintf(stderr, "\r[%4zu/%4zu] %-40s %-6s", i + 1, n, t.name.c_str(),
                   std::string(engine::ggml_type_name(t.type)).c_str());
      std::fflush(stderr);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  const Status st = synth::write_model(*plan, a.out, options);
  if (!a.quiet) std::fprintf(stderr, "\n");
  if (!st.ok()) return synth_failed(st.message(), 1);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %s %s %s, %zu tensors, %llu parameters, %llu bytes of tensor data, seed %llu (%.1f s)\n",
              a.out.c_str(), std::string(synth::arch_name(*arch)).c_str(), a.shape.c_str(),
              std::string(synth::synth_type_name(*type)).c_str(), plan->tensors.size(),
              static_cast<unsigned long long>(plan->parameter_count()),
              static_cast<unsigned long long>(plan->tensor_bytes()), static_cast<unsigned long long>(a.seed), secs);
  return 0;
}

}  // namespace

void add_synth_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("synth", "Write a random-weight GGUF model with a real architecture's structure");
  auto args = std::make_shared<SynthArgs>();
  cmd->add_option("--arch", args->arch, "Architecture: llama, qwen2, qwen3, qwen35");
  cmd->add_option("--shape", args->shape, "Shape preset (see --list-shapes), e.g. tiny, qwen35-9b");
  cmd->add_option("--type", args->type, "F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M or Q6_K (default F32)");
  cmd->add_option("--seed", args->seed, "Random seed (default 1); same seed, same bytes");
  cmd->add_option("--out", args->out, "Output GGUF file");
  cmd->add_option("--threads", args->threads, "Worker threads for generating weights (default: all cores)");
  cmd->add_option("--lora-for", args->lora_for, "Write a random LoRA adapter for this base GGUF instead of a model");
  cmd->add_option("--rank", args->rank, "LoRA rank (with --lora-for; default 16)");
  cmd->add_option("--alpha", args->alpha, "LoRA alpha (with --lora-for; default 32)");
  cmd->add_option(
      "--lora-targets", args->lora_targets,
      "Adapted weights, e.g. attn_q,attn_v (default attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down)");
  cmd->add_flag("--list-shapes", args->list_shapes, "List the shape presets (of --arch, if given) and exit");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->callback([=] { *exit_code = run_synth(*args); });
}

}  // namespace cellserve::cli
