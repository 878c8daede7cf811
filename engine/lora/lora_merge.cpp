// merge_lora(): the base model's tensors in file order, each either copied as stored or
// dequantized to F32, updated with every adapter's s·B·A and re-encoded; llama-quantize's
// per-tensor type rules come from engine/quant/quant_mix (one copy of those rules).
#include "engine/lora/lora_merge.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>

#include "base/mapped_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/quant/quant_mix.h"
#include "engine/quant/quantize.h"
#include "engine/runtime/thread_pool.h"

namespace cellserve::engine {
namespace {

// ---- Output types ----

struct MergeType {
  std::string_view name;
  QuantMix rules;  // the rules of the llama-quantize file type that applies
  // Q4_1 / Q5_0 / Q5_1 follow Q4_0's rules (llama-quantize has none of their own without an
  // importance matrix, and all four share the block of 32): Q4_0 tensors become this type.
  std::optional<GgmlType> instead_of_q4_0;
  uint32_t file_type;  // llama_ftype
};

const std::vector<MergeType>& merge_types() {
  constexpr QuantMix kQ4_0{GgmlType::Q4_0, false};
  static const std::vector<MergeType> kTypes = {
      {"F32", {GgmlType::F32, false}, std::nullopt, 0},
      {"F16", {GgmlType::F16, false}, std::nullopt, 1},
      {"BF16", {GgmlType::BF16, false}, std::nullopt, 32},
      {"Q8_0", {GgmlType::Q8_0, false}, std::nullopt, 7},
      {"Q4_0", kQ4_0, std::nullopt, 2},
      {"Q4_1", kQ4_0, GgmlType::Q4_1, 3},
      {"Q5_0", kQ4_0, GgmlType::Q5_0, 8},
      {"Q5_1", kQ4_0, GgmlType::Q5_1, 9},
      {"Q4_K_M", {GgmlType::Q4_K, true}, std::nullopt, 15},
      {"Q5_K_M", {GgmlType::Q5_K, true}, std::nullopt, 17},
      {"Q6_K", {GgmlType::Q6_K, false}, std::nullopt, 18},
  };
  return kTypes;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

Result<const MergeType*> find_merge_type(const std::string& name) {
  for (const MergeType& t : merge_types()) {
    if (equals_ignore_case(t.name, name)) return &t;
  }
  std::string known;
  for (std::string_view n : merge_type_names()) {
    if (!known.empty()) known += ' ';
    known += n;
  }
  return Status::invalid_argument("unknown type \"" + name + "\" (expected one of: " + known + ")");
}

// The layer of "blk.<n>.*", or -1 (llama_model_loader's weight_name_comparer key).
int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0 || name.size() < 5 || name[4] < '0' || name[4] > '9') return -1;
  int64_t layer = 0;
  for (size_t i = 4; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) layer = layer * 10 + (name[i] - '0');
  return layer;
}

// Sets every tensor's output type (by name) for `type`: quant_mix's rules, which expect the
// tensors in llama-quantize's processing order (by layer, then by name) and only the layer count.
Status quantize_types(const GgufFile& base, const MergeType& type, std::unordered_map<std::string, GgmlType>* out) {
  const std::string arch = base.get_string("general.architecture").value_or("");
  const std::optional<int64_t> n_layer = base.get_int(arch + ".block_count");
  if (!n_layer || *n_layer < 1) return Status::invalid_argument("the base model has no " + arch + ".block_count");
  std::vector<QuantMixTensor> plan;
  for (const GgufTensorInfo& t : base.tensors()) plan.push_back({t.name, t.shape.n_dims, t.shape.ne[0], GgmlType::F32});
  std::stable_sort(plan.begin(), plan.end(), [](const QuantMixTensor& a, const QuantMixTensor& b) {
    const int64_t la = layer_of(a.name);
    const int64_t lb = layer_of(b.name);
    return la != lb ? la < lb : a.name < b.name;
  });
  CS_RETURN_IF_ERROR(assign_quant_types(type.rules, *n_layer, &plan));
  for (const QuantMixTensor& t : plan) {
    (*out)[t.name] = t.type == GgmlType::Q4_0 && type.instead_of_q4_0 ? *type.instead_of_q4_0 : t.type;
  }
  return {};
}

// ---- The update ----

// One adapter's factors for one weight, dequantized: a [rank][n_in], b [n_out][rank].
struct Factors {
  std::vector<float> a;
  std::vector<float> b;
  int64_t rank = 0;
  float scale = 0.0f;  // s = scale · alpha / rank
};

struct Update {
  const LoraTensor* lora;
  float scale;
};

std::vector<float> dequantize(const TensorView& v) {
  const int64_t n = v.shape.ne[0];
  std::vector<float> out(static_cast<size_t>(v.shape.elements()));
  for (int64_t r = 0; r < v.shape.rows(); ++r) dequantize_row(v.type, v.row(r).data(), &out[r * n], n);
  return out;
}

// The first tensor whose merged values were not finite (reported after the write).
class NonFinite {
 public:
  void record(std::string_view name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (name_.empty()) name_ = std::string(name);
  }
  std::string name() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return name_;
  }

 private:
  mutable std::mutex mutex_;
  std::string name_;
};

// Writes W (+ every update) as `out_type` into `out`, rows spread over the pool.
void merge_tensor(const TensorView& w, GgmlType out_type, const std::vector<Update>& updates, ThreadPool& pool,
                  std::span<std::byte> out, NonFinite* bad) {
  std::vector<Factors> factors;
  for (const Update& u : updates) {
    factors.push_back({dequantize(u.lora->a), dequantize(u.lora->b), u.lora->rank, u.scale});
  }
  const int64_t n_in = w.shape.ne[0];
  const int64_t rows = w.shape.rows();
  const size_t out_row_bytes = ggml_row_size(out_type, n_in);
  constexpr int64_t kRowsPerChunk = 16;
  pool.parallel_chunks((rows + kRowsPerChunk - 1) / kRowsPerChunk, [&](int64_t chunk) {
    std::vector<float> row(static_cast<size_t>(n_in));
    std::vector<float> delta(static_cast<size_t>(n_in));
    const int64_t end = std::min(rows, (chunk + 1) * kRowsPerChunk);
    for (int64_t o = chunk * kRowsPerChunk; o < end; ++o) {
      dequantize_row(w.type, w.row(o).data(), row.data(), n_in);
      for (const Factors& f : factors) {
        // delta = B[o] · A (row o of B·A), then W[o] += s · delta, as llama-export-lora orders it.
        std::fill(delta.begin(), delta.end(), 0.0f);
        const float* b = &f.b[static_cast<size_t>(o * f.rank)];
        for (int64_t k = 0; k < f.rank; ++k) {
          const float* a = &f.a[static_cast<size_t>(k * n_in)];
          const float bk = b[k];
          for (int64_t i = 0; i < n_in; ++i) delta[i] += bk * a[i];
        }
        for (int64_t i = 0; i < n_in; ++i) row[i] += f.scale * delta[i];
      }
      std::byte* dst = out.data() + static_cast<size_t>(o) * out_row_bytes;
      if (!std::all_of(row.begin(), row.end(), [](float x) { return std::isfinite(x); })) {
        bad->record(w.name);  // quantize_row requires finite input; the merge fails after the write
        std::memset(dst, 0, out_row_bytes);
        continue;
      }
      quantize_row(out_type, row.data(), dst, n_in);
    }
  });
}

// ---- Metadata ----

// Array `key` of the base (merges recorded by an earlier merge), or an empty array.
GgufArray existing_array(const GgufFile& base, const std::string& key, GgufValueType element_type) {
  const GgufValue* v = base.find(key);
  const GgufArray* a = v == nullptr ? nullptr : v->as_array();
  if (a == nullptr || a->element_type != element_type) return GgufArray{element_type, {}};
  return *a;
}

// Copies the base's metadata; with an output type, sets the two keys llama-quantize sets.
// Returns the output's general.file_type (0 when there is none).
uint32_t copy_metadata(const GgufFile& base, const MergeType* type, GgufWriter* writer) {
  for (const GgufKeyValue& kv : base.metadata()) writer->set(kv.key, kv.value);
  if (type == nullptr) return static_cast<uint32_t>(base.get_int("general.file_type").value_or(0));
  // As llama-quantize does: both keys set anew, so they move to the end.
  writer->remove("general.quantization_version");
  writer->remove("general.file_type");
  writer->set("general.quantization_version", GgufValue::u32(2));  // GGML_QNT_VERSION
  writer->set("general.file_type", GgufValue::u32(type->file_type));
  return type->file_type;
}

void record_merge(const GgufFile& base, const std::vector<LoraArg>& adapters, GgufWriter* writer) {
  GgufArray names = existing_array(base, "general.merged_lora.adapters", GgufValueType::String);
  GgufArray scales = existing_array(base, "general.merged_lora.scales", GgufValueType::Float32);
  for (size_t i = 0; i < adapters.size(); ++i) {
    names.items.push_back(GgufValue::string(std::filesystem::path(adapters[i].path).filename().string()));
    scales.items.push_back(GgufValue::f32(adapters[i].scale));
  }
  writer->set("general.merged_lora.adapters", GgufValue::array(std::move(names)));
  writer->set("general.merged_lora.scales", GgufValue::array(std::move(scales)));
}

// Writes `writer` to a temporary name and renames it to `out_path` only if no tensor went
// non-finite, so `out_path` never holds a failed merge.
Status write_checked(const GgufWriter& writer, const std::string& out_path, const NonFinite& bad) {
  const std::string tmp = out_path + ".merging";
  CS_RETURN_IF_ERROR(writer.write(tmp));
  std::error_code ec;
  if (const std::string name = bad.name(); !name.empty()) {
    std::filesystem::remove(tmp, ec);
    return Status::invalid_argument(name +
                                    ": the merged weights are not finite (the update overflows F32, or the stored "
                                    "weights are not finite)");
  }
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status::internal("cannot rename " + tmp + " to " + out_path + ": " + ec.message());
  }
  return {};
}

}  // namespace

const std::vector<std::string_view>& merge_type_names() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> names;
    for (const MergeType& t : merge_types()) names.push_back(t.name);
    return names;
  }();
  return kNames;
}

Result<MergeSummary> merge_lora(const std::string& base_path, const std::vector<LoraArg>& adapters,
                                const MergeOptions& options, const std::string& out_path) {
  if (adapters.empty()) return Status::invalid_argument("no adapter to merge");
  const MergeType* type = nullptr;
  if (!options.type.empty()) {
    CS_ASSIGN_OR_RETURN(type, find_merge_type(options.type));
  }
  CS_ASSIGN_OR_RETURN(GgufFile base, GgufFile::open(base_path));

  // Open and check every adapter, then collect each weight's updates in adapter order.
  std::vector<std::shared_ptr<const LoraAdapter>> opened;
  std::unordered_map<std::string, std::vector<Update>> updates;
  for (const LoraArg& arg : adapters) {
    CS_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> adapter, LoraAdapter::open(arg.path, base));
    for (const LoraTensor& t : adapter->tensors()) {
      const float s = adapter->effective_scale(arg.scale, t.rank);
      if (s != 0.0f) updates[t.base_name].push_back({&t, s});  // a zero update leaves W as stored
    }
    opened.push_back(std::move(adapter));
  }

  std::unordered_map<std::string, GgmlType> out_types;
  if (type != nullptr) CS_RETURN_IF_ERROR(quantize_types(base, *type, &out_types));

  GgufWriter writer;
  MergeSummary summary;
  summary.file_type = copy_metadata(base, type, &writer);
  record_merge(base, adapters, &writer);

  const int n_threads =
      options.n_threads > 0 ? options.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  NonFinite bad;
  const size_t count = base.tensors().size();
  for (size_t i = 0; i < count; ++i) {
    const GgufTensorInfo& info = base.tensors()[i];
    const TensorView w = base.view(info);
    const auto u = updates.find(info.name);
    const std::vector<Update> none;
    const std::vector<Update>& tensor_updates = u == updates.end() ? none : u->second;
    const GgmlType out_type = type != nullptr ? out_types.at(info.name) : info.type;
    const bool copy = tensor_updates.empty() && out_type == info.type;
    if (!copy && (!can_dequantize(info.type) || !can_quantize(out_type))) {
      return Status::unimplemented(info.name + ": cannot convert type " + std::string(ggml_type_name(info.type)) +
                                   " to " + std::string(ggml_type_name(out_type)));
    }
    summary.n_adapted += tensor_updates.empty() ? 0 : 1;
    summary.n_converted += copy ? 0 : 1;
    GgufWriter::TensorFiller fill = [&, w, out_type, copy, tensor_updates, i, count](std::span<std::byte> out) {
      if (options.progress) options.progress(i, count, std::string(w.name));
      if (copy) {
        std::memcpy(out.data(), w.data.data(), out.size());
      } else {
        merge_tensor(w, out_type, tensor_updates, pool, out, &bad);
      }
    };
    CS_RETURN_IF_ERROR(writer.add_tensor(info.name, out_type, info.shape, std::move(fill)));
  }
  summary.n_tensors = count;
  CS_RETURN_IF_ERROR(write_checked(writer, out_path, bad));
  return summary;
}

}  // namespace cellserve::engine
