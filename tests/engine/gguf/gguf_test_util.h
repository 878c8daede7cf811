// Helpers for building and corrupting GGUF images in tests.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace cellserve::engine::testing {

// A small valid file: two metadata keys and two tensors ("tok", f32 [8, 2]; "w", q8_0 [64, 1]).
inline GgufWriter small_model_writer() {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("llama"));
  w.set("test.count", GgufValue::u32(7));
  std::vector<float> tok(16);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<float>(i) * 0.5f;
  (void)w.add_tensor("tok", GgmlType::F32, make_shape({8, 2}), std::as_bytes(std::span(tok)));
  std::vector<std::byte> q8(2 * 34, std::byte{1});
  (void)w.add_tensor("w", GgmlType::Q8_0, make_shape({64, 1}), q8);
  return w;
}

// Offset of the first occurrence of `needle` in `bytes`; npos when absent.
inline size_t find_bytes(const std::vector<std::byte>& bytes, const std::string& needle) {
  const auto* hay = reinterpret_cast<const char*>(bytes.data());
  for (size_t i = 0; i + needle.size() <= bytes.size(); ++i) {
    if (std::memcmp(hay + i, needle.data(), needle.size()) == 0) return i;
  }
  return std::string::npos;
}

template <typename T>
void poke(std::vector<std::byte>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

inline Result<GgufFile> parse(const std::vector<std::byte>& bytes) { return GgufFile::parse(bytes); }

}  // namespace cellserve::engine::testing
