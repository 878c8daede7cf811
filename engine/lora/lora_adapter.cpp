#include "engine/lora/lora_adapter.h"

#include <charconv>
#include <cmath>
#include <filesystem>

#include "engine/kernels/kernel_table.h"
#include "engine/models/model.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {
namespace {

constexpr std::string_view kSuffixA = ".lora_a";
constexpr std::string_view kSuffixB = ".lora_b";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A 2-D matrix (trailing dimensions of 1).
bool is_matrix(const Shape& s) { return s.ne[2] == 1 && s.ne[3] == 1; }

}  // namespace

Result<std::shared_ptr<const LoraAdapter>> LoraAdapter::open(const std::string& path, const GgufFile& base) {
  auto fail = [&](const std::string& what) { return Status::invalid_argument("LoRA adapter " + path + ": " + what); };
  CS_ASSIGN_OR_RETURN(GgufFile opened, GgufFile::open(path));
  auto file = std::make_shared<const GgufFile>(std::move(opened));

  const std::string type = file->get_string("general.type").value_or("");
  if (type != "adapter") return fail("general.type is \"" + type + "\", expected \"adapter\"");
  const std::string adapter_type = file->get_string("adapter.type").value_or("");
  if (adapter_type != "lora") return fail("adapter.type is \"" + adapter_type + "\", expected \"lora\"");
  const std::string arch = file->get_string("general.architecture").value_or("");
  const std::string base_arch = base.get_string("general.architecture").value_or("");
  if (arch != base_arch) return fail("architecture " + arch + " does not match the base model's " + base_arch);
  const double alpha = file->get_float("adapter.lora.alpha").value_or(0.0);
  if (!std::isfinite(alpha)) return fail("adapter.lora.alpha is not finite");

  std::shared_ptr<LoraAdapter> adapter(new LoraAdapter());
  adapter->path_ = path;
  adapter->alpha_ = static_cast<float>(alpha);
  adapter->name_ = std::filesystem::path(path).stem().string();

  for (const GgufTensorInfo& info : file->tensors()) {
    const bool is_a = ends_with(info.name, kSuffixA);
    if (!is_a && !ends_with(info.name, kSuffixB)) return fail("tensor " + info.name + " is not a lora_a/lora_b factor");
    const std::string base_name = info.name.substr(0, info.name.size() - kSuffixA.size());
    const GgufTensorInfo* a = is_a ? &info : file->find_tensor(base_name + std::string(kSuffixA));
    const GgufTensorInfo* b = is_a ? file->find_tensor(base_name + std::string(kSuffixB)) : &info;
    if (a == nullptr || b == nullptr)
      return fail("tensor " + info.name + " has no matching " + (is_a ? "lora_b" : "lora_a"));
    if (!is_a) continue;  // each pair is taken once, from its lora_a
    for (const GgufTensorInfo* f : {a, b}) {
      if (!can_dequantize(f->type)) {
        return fail("tensor " + f->name + ": type " + std::string(ggml_type_name(f->type)) + " is not supported");
      }
      if (!is_matrix(f->shape)) return fail("tensor " + f->name + " is not a matrix: " + f->shape.to_string());
    }
    const GgufTensorInfo* w = base.find_tensor(base_name);
    if (w == nullptr)
      return fail("tensor " + a->name + " adapts " + base_name + ", which the base model does not have");
    if (!is_matrix(w->shape)) return fail(base_name + " in the base model is not a matrix");
    const int64_t rank = a->shape.ne[1];
    if (a->shape.ne[0] != w->shape.ne[0] || b->shape.ne[0] != rank || b->shape.ne[1] != w->shape.ne[1] || rank < 1) {
      return fail("tensors " + a->name + " " + a->shape.to_string() + " and " + b->name + " " + b->shape.to_string() +
                  " do not fit " + base_name + " " + w->shape.to_string() + " (expected {n_in, r} and {r, n_out})");
    }
    LoraTensor t;
    t.base_name = base_name;
    t.a = file->view(*a);
    t.b = file->view(*b);
    t.rank = rank;
    adapter->by_base_data_.emplace(base.view(*w).data.data(), adapter->tensors_.size());
    adapter->tensors_.push_back(std::move(t));
  }
  if (adapter->tensors_.empty()) return fail("it adapts no tensor");
  adapter->file_ = std::move(file);
  return std::shared_ptr<const LoraAdapter>(std::move(adapter));
}

Result<std::shared_ptr<const LoraAdapter>> LoraAdapter::load(const std::string& path, const Model& base) {
  CS_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> adapter, open(path, base.file()));
  for (const LoraTensor& t : adapter->tensors()) {
    if (!base.multiplies_with(t.base_name)) {
      return Status::unimplemented("LoRA adapter " + path + ": " + t.base_name +
                                   " is not a matrix the model multiplies activations with (embedding tables and "
                                   "convolutions cannot be adapted at run time; merge the adapter instead)");
    }
    for (const TensorView* f : {&t.a, &t.b}) {
      if (!kernels::active_kernels().for_weight(f->type).supported) {
        return Status::unimplemented("LoRA adapter " + path + ": " + std::string(f->name) + ": type " +
                                     std::string(ggml_type_name(f->type)) + " is not supported");
      }
    }
  }
  return adapter;
}

Result<LoraArg> parse_lora_arg(const std::string& text) {
  LoraArg arg{text, 1.0f};
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return arg;
  const std::string tail = text.substr(colon + 1);
  float scale = 0.0f;
  const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), scale);
  if (ec != std::errc() || end != tail.data() + tail.size() || tail.empty()) {
    // Not a number: the ':' belongs to the path unless the tail looks like a failed scale.
    if (tail.find('/') != std::string::npos || std::filesystem::exists(text)) return arg;
    return Status::invalid_argument("--lora " + text + ": scale \"" + tail + "\" is not a number");
  }
  if (!std::isfinite(scale)) return Status::invalid_argument("--lora " + text + ": scale must be finite");
  arg.path = text.substr(0, colon);
  arg.scale = scale;
  return arg;
}

Result<LoraSet> load_lora_set(const std::vector<std::string>& args, const Model& base) {
  LoraSet set;
  for (const std::string& text : args) {
    CS_ASSIGN_OR_RETURN(const LoraArg arg, parse_lora_arg(text));
    CS_ASSIGN_OR_RETURN(auto adapter, LoraAdapter::load(arg.path, base));
    set.push_back(ScaledLora{std::move(adapter), arg.scale});
  }
  return set;
}

}  // namespace cellserve::engine
