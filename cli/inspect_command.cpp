// `cellserve inspect FILE [--json]`: everything a GGUF file says about its model.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_summary.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;
using engine::GgufFile;
using engine::GgufSummary;
using engine::TokenizerSummary;

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1ull << 30));
  else if (n >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(n) / (1ull << 20));
  else if (n >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(n) / (1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  return buf;
}

void print_text(const std::string& path, const GgufFile& f, const GgufSummary& s) {
  std::printf("file:          %s (%s, %llu bytes)\n", path.c_str(), human_bytes(f.file_size()).c_str(),
              static_cast<unsigned long long>(f.file_size()));
  std::printf("format:        GGUF v%u, alignment %zu, data at offset %llu\n", f.version(), f.alignment(),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("architecture:  %s\n", s.architecture.empty() ? "(none)" : s.architecture.c_str());
  if (!s.name.empty()) std::printf("name:          %s\n", s.name.c_str());
  if (!s.file_type.empty()) std::printf("file type:     %s\n", s.file_type.c_str());
  std::printf("parameters:    %llu (%s of tensor data)\n", static_cast<unsigned long long>(s.parameter_count),
              human_bytes(s.tensor_bytes).c_str());

  std::printf("\nhyperparameters:\n");
  for (const auto* kv : s.hyperparameters)
    std::printf("  %-44s %s\n", kv->key.c_str(), kv->value.to_display_string().c_str());

  const TokenizerSummary& t = s.tokenizer;
  std::printf("\ntokenizer:\n");
  if (t.model.empty()) {
    std::printf("  (none)\n");
  } else {
    std::printf("  model %s, pre-tokenizer %s, %lld tokens, %lld merges\n", t.model.c_str(),
                t.pre.empty() ? "(default)" : t.pre.c_str(), static_cast<long long>(t.vocab_size),
                static_cast<long long>(t.merges));
    for (const auto& sp : t.special_tokens) {
      std::printf("  %-8s %lld %s\n", sp.role.c_str(), static_cast<long long>(sp.id), sp.text.c_str());
    }
    std::printf("  add_bos %s, add_eos %s\n", t.add_bos ? t.add_bos->c_str() : "(unset)",
                t.add_eos ? t.add_eos->c_str() : "(unset)");
  }
  std::printf("  chat template: %s\n", s.chat_template_chars
                                           ? ("present (" + std::to_string(*s.chat_template_chars) + " chars)").c_str()
                                           : "absent");

  std::printf("\nother metadata:\n");
  for (const auto* kv : s.other_metadata)
    std::printf("  %-44s %s\n", kv->key.c_str(), kv->value.to_display_string().c_str());

  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::printf("  %-40s %-8s %-24s %14s %14s\n", "name", "type", "shape", "bytes", "offset");
  for (const auto& ti : f.tensors()) {
    std::printf("  %-40s %-8s %-24s %14llu %14llu\n", ti.name.c_str(),
                std::string(engine::ggml_type_name(ti.type)).c_str(), ti.shape.to_string().c_str(),
                static_cast<unsigned long long>(ti.size_bytes), static_cast<unsigned long long>(ti.offset));
  }
  std::printf("\ntotals: %zu tensors, %llu parameters, %llu bytes; by type:", f.tensors().size(),
              static_cast<unsigned long long>(s.parameter_count), static_cast<unsigned long long>(s.tensor_bytes));
  for (const auto& [type, count] : s.type_census) std::printf(" %s x%d", type.c_str(), count);
  std::printf("\n");
}

json::value value_to_json(const engine::GgufValue& v, bool full_arrays);

json::value array_to_json(const engine::GgufArray& a, bool full_arrays) {
  // Vocabulary-sized arrays are summarised: the JSON stays readable and small.
  constexpr size_t kMaxItems = 64;
  if (!full_arrays && a.items.size() > kMaxItems) {
    return json::object{{"array_of", engine::gguf_value_type_name(a.element_type)}, {"length", a.items.size()}};
  }
  json::array out;
  for (const auto& item : a.items) out.push_back(value_to_json(item, full_arrays));
  return out;
}

json::value value_to_json(const engine::GgufValue& v, bool full_arrays) {
  return std::visit(
      [&](const auto& x) -> json::value {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          return json::string(x);
        else if constexpr (std::is_same_v<T, engine::GgufArray>)
          return array_to_json(x, full_arrays);
        else if constexpr (std::is_same_v<T, bool>)
          return x;
        else if constexpr (std::is_floating_point_v<T>)
          return static_cast<double>(x);
        else if constexpr (std::is_signed_v<T>)
          return static_cast<int64_t>(x);
        else
          return static_cast<uint64_t>(x);
      },
      v.storage());
}

void print_json(const std::string& path, const GgufFile& f, const GgufSummary& s, bool full_arrays) {
  json::object metadata;
  for (const auto& kv : f.metadata()) {
    metadata[kv.key] = json::object{{"type", engine::gguf_value_type_name(kv.value.type())},
                                    {"value", value_to_json(kv.value, full_arrays)}};
  }
  json::array tensors;
  for (const auto& ti : f.tensors()) {
    json::array shape;
    for (int d = 0; d < ti.shape.n_dims; ++d) shape.push_back(ti.shape.ne[static_cast<size_t>(d)]);
    tensors.push_back(json::object{{"name", ti.name},
                                   {"type", std::string(engine::ggml_type_name(ti.type))},
                                   {"shape", shape},
                                   {"bytes", ti.size_bytes},
                                   {"offset", ti.offset}});
  }
  json::object tokenizer;
  if (!s.tokenizer.model.empty()) {
    json::object specials;
    for (const auto& sp : s.tokenizer.special_tokens)
      specials[sp.role] = json::object{{"id", sp.id}, {"text", sp.text}};
    tokenizer = json::object{{"model", s.tokenizer.model},
                             {"pre", s.tokenizer.pre},
                             {"vocab_size", s.tokenizer.vocab_size},
                             {"merges", s.tokenizer.merges},
                             {"special_tokens", specials}};
  }
  json::object census;
  for (const auto& [type, count] : s.type_census) census[type] = count;
  json::object out{{"file", path},
                   {"file_size", f.file_size()},
                   {"version", f.version()},
                   {"alignment", f.alignment()},
                   {"data_offset", f.data_offset()},
                   {"architecture", s.architecture},
                   {"file_type", s.file_type},
                   {"parameter_count", s.parameter_count},
                   {"tensor_bytes", s.tensor_bytes},
                   {"has_chat_template", s.chat_template_chars.has_value()},
                   {"tokenizer", tokenizer},
                   {"metadata", metadata},
                   {"tensors", tensors},
                   {"tensor_types", census}};
  std::cout << json::serialize(out) << "\n";
}

}  // namespace

void add_inspect_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Show a GGUF file's metadata, tokenizer and tensor table");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto full_arrays = std::make_shared<bool>(false);
  cmd->add_option("file", *path, "GGUF model file")->required();
  cmd->add_flag("--json", *as_json, "Print one JSON object instead of text");
  cmd->add_flag("--full-arrays", *full_arrays, "With --json, print long arrays (vocabularies) in full");
  cmd->callback([=] {
    auto file = GgufFile::open(*path);
    if (!file.ok()) {
      print_error("inspect", file.status().message());
      *exit_code = 2;
      return;
    }
    const GgufSummary summary = engine::summarize(*file);
    if (*as_json)
      print_json(*path, *file, summary, *full_arrays);
    else
      print_text(*path, *file, summary);
    *exit_code = 0;
  });
}

}  // namespace cellserve::cli
