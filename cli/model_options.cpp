#include "cli/model_options.h"

#include <charconv>

#include "engine/chat/builtin_templates.h"
#include "engine/models/model.h"
#include "engine/runtime/cpu_topology.h"
#include "engine/runtime/kv_type.h"

namespace cellserve::cli {

void ModelOptions::add_to(CLI::App* cmd) {
  cmd->add_option("-m,--model", model_path, "GGUF model file")->required();
  cmd->add_option("-t,--threads", threads, "Threads for the forward pass (default: the performance cores available)");
  cmd->add_option("-c,--ctx-size", ctx_size, "KV cache size in tokens");
  cmd->add_option("-b,--batch-size", batch_size, "Tokens per forward pass during prompt processing");
  cmd->add_option("--kv-type", kv_type, "KV cache type: f16, f32 or q8_0");
  cmd->add_option("--lora", lora, "LoRA adapter GGUF, FILE or FILE:SCALE (default scale 1); repeatable")
      ->take_all()
      ->allow_extra_args(false);
  add_cpus_option(cmd, &cpus);
}

void add_cpus_option(CLI::App* cmd, std::string* cpus) {
  cmd->add_option("--cpus", *cpus,
                  "CPUs the compute threads run on, as 0-3,6 (default: the performance cores of a big.LITTLE CPU)");
}

Status pin_compute_cpus(const std::string& cpus_text) {
  std::vector<int> cpus;
  if (!cpus_text.empty()) {
    CS_ASSIGN_OR_RETURN(cpus, engine::parse_cpu_list(cpus_text));
  }
  return engine::pin_to_compute_cpus(cpus).status();
}

void add_chat_template_options(CLI::App* cmd, engine::chat::TemplateChoice* choice) {
  cmd->add_option("--chat-template-file", choice->file, "Jinja chat template file to use instead of the model's own");
  cmd->add_option("--chat-template", choice->name,
                  "Built-in chat template to use instead of the model's own: " +
                      engine::chat::builtin_chat_template_list() + " (default: the model's; chatml when it has none)");
}

Result<engine::LoraSet> ModelOptions::load_lora(const engine::Model& model) const {
  return engine::load_lora_set(lora, model);
}

Result<std::unique_ptr<engine::Context>> ModelOptions::create_context(int n_seq) const {
  engine::ContextParams params;
  params.n_ctx = ctx_size;
  params.n_batch = batch_size;
  params.n_threads = threads > 0 ? threads : engine::default_thread_count();
  params.n_seq_max = n_seq;
  CS_ASSIGN_OR_RETURN(params.kv_type, engine::parse_kv_type(kv_type));
  if (threads < 0) return Status::invalid_argument("--threads must be positive");
  CS_ASSIGN_OR_RETURN(auto model, engine::load_model(model_path));
  CS_ASSIGN_OR_RETURN(engine::LoraSet adapters, load_lora(*model));
  CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(std::move(model), params));
  if (!adapters.empty()) {
    CS_RETURN_IF_ERROR(ctx->set_lora(-1, std::make_shared<const engine::LoraSet>(std::move(adapters))));
  }
  return ctx;
}

Result<std::vector<int32_t>> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i == text.size()) break;
    size_t j = i;
    while (j < text.size() && text[j] != ',' && text[j] != ' ') ++j;
    int32_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + j, v);
    if (ec != std::errc() || ptr != text.data() + j || v < 0) {
      return Status::invalid_argument("bad token id '" + text.substr(i, j - i) + "'");
    }
    ids.push_back(v);
    i = j;
  }
  if (ids.empty()) return Status::invalid_argument("no token ids given");
  return ids;
}

}  // namespace cellserve::cli
