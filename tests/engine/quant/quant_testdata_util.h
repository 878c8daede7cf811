// Comparing the quantized testdata models with their F32 masters, for quant_testdata_test
// and quant_rmse_report: decode every tensor and measure its error against the master, and
// re-encode the master with our quantize_row to count blocks byte-identical to llama-quantize's.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/quant/quantize.h"

namespace cellserve::testing {

// The testdata model files: each quantized variant and the F32 master it was made from
// (shared/testdata/README.md §1).
struct QuantizedModel {
  std::string file;    // relative to the testdata folder
  std::string master;  // relative to the testdata folder
};

inline std::vector<QuantizedModel> testdata_quantized_models() {
  std::vector<QuantizedModel> out;
  for (const char* model : {"llama-tiny", "qwen3-tiny", "qwen35-tiny"}) {
    for (const char* variant : {"f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k"}) {
      out.push_back(
          {std::string("models/") + model + "-" + variant + ".gguf", std::string("models/") + model + "-f32.gguf"});
    }
  }
  out.push_back({"models/stories260K-q8_0.gguf", "models/stories260K.gguf"});
  out.push_back({"models/stories260K-q4_0.gguf", "models/stories260K.gguf"});
  return out;
}

// What one quantized tensor looks like next to its master.
struct TensorComparison {
  std::string name;
  engine::GgmlType type = engine::GgmlType::F32;
  int64_t elements = 0;
  double err_sq = 0;             // sum over elements of (decoded - master)^2
  double master_sq = 0;          // sum of master^2
  int64_t blocks = 0;            // blocks (elements for F16/BF16) re-encoded from the master
  int64_t blocks_identical = 0;  // ... whose bytes equal the file's
  double rel_rmse() const { return master_sq > 0 ? std::sqrt(err_sq / master_sq) : std::sqrt(err_sq); }
};

// Compares every tensor of `quant` with the same-named F32 tensor of `master`. Sets *error
// (and returns what it has) when a tensor is missing, not F32 in the master, or shaped
// differently. Byte comparison runs only for types with can_quantize().
inline std::vector<TensorComparison> compare_with_master(const engine::GgufFile& quant, const engine::GgufFile& master,
                                                         std::string* error) {
  std::vector<TensorComparison> out;
  for (const auto& info : quant.tensors()) {
    const engine::GgufTensorInfo* minfo = master.find_tensor(info.name);
    if (minfo == nullptr || minfo->type != engine::GgmlType::F32 || !(minfo->shape == info.shape)) {
      *error = "master lacks an F32 tensor shaped like " + info.name;
      return out;
    }
    const engine::TensorView q = quant.view(info);
    const engine::TensorView m = master.view(*minfo);
    TensorComparison c;
    c.name = info.name;
    c.type = info.type;
    c.elements = info.shape.elements();
    const int64_t ne0 = info.shape.ne[0];
    const bool can_encode = engine::can_quantize(info.type);
    const size_t block_bytes = engine::ggml_type_size(info.type);
    std::vector<float> master_row(static_cast<size_t>(ne0)), decoded(static_cast<size_t>(ne0));
    std::vector<std::byte> encoded(engine::ggml_row_size(info.type, ne0));
    for (int64_t r = 0; r < info.shape.rows(); ++r) {
      std::memcpy(master_row.data(), m.row(r).data(), static_cast<size_t>(ne0) * sizeof(float));
      const auto qrow = q.row(r);
      engine::dequantize_row(info.type, qrow.data(), decoded.data(), ne0);
      for (int64_t i = 0; i < ne0; ++i) {
        const double d = static_cast<double>(decoded[static_cast<size_t>(i)]) - master_row[static_cast<size_t>(i)];
        c.err_sq += d * d;
        c.master_sq += static_cast<double>(master_row[static_cast<size_t>(i)]) * master_row[static_cast<size_t>(i)];
      }
      if (!can_encode) continue;
      engine::quantize_row(info.type, master_row.data(), encoded.data(), ne0);
      for (size_t off = 0; off < encoded.size(); off += block_bytes) {
        ++c.blocks;
        if (std::memcmp(encoded.data() + off, qrow.data() + off, block_bytes) == 0) ++c.blocks_identical;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace cellserve::testing
