#include "engine/gguf/gguf_summary.h"

#include "engine/gguf/file_type.h"

namespace cellserve::engine {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TokenizerSummary summarize_tokenizer(const GgufFile& f) {
  TokenizerSummary t;
  t.model = f.get_string("tokenizer.ggml.model").value_or("");
  t.pre = f.get_string("tokenizer.ggml.pre").value_or("");
  const GgufArray* tokens = nullptr;
  if (const GgufValue* v = f.find("tokenizer.ggml.tokens")) tokens = v->as_array();
  if (tokens != nullptr) t.vocab_size = static_cast<int64_t>(tokens->items.size());
  if (const GgufValue* v = f.find("tokenizer.ggml.merges"); v != nullptr && v->as_array() != nullptr) {
    t.merges = static_cast<int64_t>(v->as_array()->items.size());
  }
  for (const char* role : {"bos", "eos", "eot", "eom", "pad", "unk", "sep", "mask"}) {
    const auto id = f.get_int(std::string("tokenizer.ggml.") + role + "_token_id");
    if (!id) continue;
    SpecialToken sp{role, *id, "(out of range)"};
    if (tokens != nullptr && *id >= 0 && *id < t.vocab_size) {
      if (const std::string* s = tokens->items[static_cast<size_t>(*id)].as_string()) sp.text = *s;
    }
    t.special_tokens.push_back(sp);
  }
  if (auto b = f.get_bool("tokenizer.ggml.add_bos_token")) t.add_bos = *b ? "true" : "false";
  if (auto b = f.get_bool("tokenizer.ggml.add_eos_token")) t.add_eos = *b ? "true" : "false";
  return t;
}

}  // namespace

GgufSummary summarize(const GgufFile& f) {
  GgufSummary s;
  s.architecture = f.get_string("general.architecture").value_or("");
  s.name = f.get_string("general.name").value_or("");
  if (auto ft = f.get_int("general.file_type")) {
    const auto name = file_type_name(static_cast<uint32_t>(*ft));
    s.file_type = std::string(name.value_or("unknown")) + " (" + std::to_string(*ft) + ")";
  }
  const std::string arch_prefix = s.architecture + ".";
  for (const auto& kv : f.metadata()) {
    if (!s.architecture.empty() && starts_with(kv.key, arch_prefix)) {
      s.hyperparameters.push_back(&kv);
    } else if (!starts_with(kv.key, "tokenizer.")) {
      s.other_metadata.push_back(&kv);
    }
  }
  s.tokenizer = summarize_tokenizer(f);
  if (auto tmpl = f.get_string("tokenizer.chat_template")) s.chat_template_chars = tmpl->size();
  for (const auto& ti : f.tensors()) {
    s.parameter_count += static_cast<uint64_t>(ti.shape.elements());
    s.tensor_bytes += ti.size_bytes;
    ++s.type_census[std::string(ggml_type_name(ti.type))];
  }
  return s;
}

}  // namespace cellserve::engine
