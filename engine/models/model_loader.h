// Reading hyperparameters and binding tensors of a GGUF model, with precise errors.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/huge_page_arena.h"
#include "base/status.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::engine {

// Reads "<arch>.<key>" metadata. The first error is kept; later calls still return defaults so
// loading code can read everything and check status() once.
class HparamReader {
 public:
  HparamReader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  // Required integer key "<arch>.<key>"; must be within [min, max].
  int64_t require_int(const std::string& key, int64_t min = 1, int64_t max = int64_t{1} << 40);
  int64_t int_or(const std::string& key, int64_t fallback, int64_t min = 0, int64_t max = int64_t{1} << 40);
  float float_or(const std::string& key, float fallback);
  std::string string_or(const std::string& key, const std::string& fallback);
  // Full key (no arch prefix) variants.
  std::optional<int64_t> global_int(const std::string& full_key);

  const Status& status() const { return status_; }
  const std::string& arch() const { return arch_; }

 private:
  void fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  const GgufFile& file_;
  std::string arch_;
  Status status_;
};

// The bytes v's rows take in the active kernel table's packed layout (kernel_table.h), or 0 when
// the table does not pack v's type or v's shape does not allow it (rows not a multiple of
// kPackedRows, n not a multiple of the block and of packed_n_multiple).
size_t packed_size(const TensorView& v);
// v's rows in that layout, in a piece of `arena` (which the result keeps alive).
// REQUIRES: packed_size(v) > 0.
Result<std::shared_ptr<const std::byte>> pack_rows(const TensorView& v, HugePageArena& arena);

// Looks up tensors by name and checks type support and shape. Like HparamReader, it keeps the
// first error: "blk.3.ffn_down.weight: expected shape [4864, 896], got [896, 4864]".
class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& file) : file_(file) {}

  // A matrix or vector used by the kernels: any type the active kernel table supports.
  // Returns an empty view (data empty) when absent and not required.
  TensorView weight(const std::string& name, std::initializer_list<int64_t> shape, bool required = true);
  // weight() for a table the forward pass reads a row at a time (the token embedding): not in
  // resident(), since its pages come from the file as rows are looked up (pack() adds it when a
  // tied output matrix must read it whole).
  TensorView lookup_table(const std::string& name, std::initializer_list<int64_t> shape, bool required = true);
  // weight() for a matrix the forward pass multiplies activations with; its name is recorded
  // in projections() (the weights a LoRA adapter may adapt).
  // The active kernel table packs it (see pack()).
  TensorView projection(const std::string& name, std::initializer_list<int64_t> shape, bool required = true) {
    TensorView v = weight(name, shape, required);
    if (v.data.empty()) return v;
    projections_.push_back(name);
    return pack(std::move(v));
  }
  // `v` with its rows also in the active kernel table's packed layout when the table packs its
  // type and the shape allows (rows a multiple of kPackedRows); the original pages are then
  // released from resident memory (they are read again only on demand).
  TensorView pack(TensorView v);
  const std::vector<std::string>& projections() const { return projections_; }
  // The memory the bound weights are read from: a packed tensor's copy, else its mapped bytes
  // (not the mapped bytes pack() released). What `serve --mlock` locks.
  const std::vector<std::span<const std::byte>>& resident() const { return resident_; }
  // A small F32 vector (norm weights, biases): dequantized into an owned vector.
  std::vector<float> vector(const std::string& name, int64_t size, bool required = true);
  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  const Status& status() const { return status_; }

 private:
  const GgufTensorInfo* find(const std::string& name, std::initializer_list<int64_t> shape, bool required);
  void fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  const GgufFile& file_;
  Status status_;
  std::vector<std::string> projections_;
  std::vector<std::span<const std::byte>> resident_;
  HugePageArena arena_;  // the packed copies; each tensor keeps its chunk alive
};

}  // namespace cellserve::engine
