// Writes small valid GGUF files into the directory given as argv[1]: the fuzzer's seed corpus.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"

using namespace cellserve::engine;

namespace {

void save(const std::filesystem::path& dir, const std::string& name, const GgufWriter& w) {
  const auto bytes = w.to_bytes();
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

GgufWriter every_value_type() {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("llama"));
  w.set("a.u8", GgufValue::u8(1));
  w.set("a.i8", GgufValue::i8(-1));
  w.set("a.u16", GgufValue::u16(2));
  w.set("a.i16", GgufValue::i16(-2));
  w.set("a.u32", GgufValue::u32(3));
  w.set("a.i32", GgufValue::i32(-3));
  w.set("a.f32", GgufValue::f32(0.5f));
  w.set("a.bool", GgufValue::boolean(true));
  w.set("a.u64", GgufValue::u64(4));
  w.set("a.i64", GgufValue::i64(-4));
  w.set("a.f64", GgufValue::f64(0.25));
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"<s>", "</s>", "a", "b"}));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(0));
  GgufArray nested{GgufValueType::Array, {GgufValue::i32_array({1, 2}), GgufValue::f32_array({})}};
  w.set("a.nested", GgufValue::array(nested));
  return w;
}

GgufWriter with_tensors(uint32_t alignment) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  w.set("general.alignment", GgufValue::u32(alignment));
  std::vector<std::byte> f32(4 * 8, std::byte{0x3f});
  (void)w.add_tensor("token_embd.weight", GgmlType::F32, make_shape({4, 2}), f32);
  std::vector<std::byte> q8(34 * 2, std::byte{0x11});
  (void)w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, make_shape({32, 2}), q8);
  std::vector<std::byte> q4k(144, std::byte{0x22});
  (void)w.add_tensor("blk.0.ffn_up.weight", GgmlType::Q4_K, make_shape({256, 1}), q4k);
  std::vector<std::byte> f16(2 * 3 * 2 * 2, std::byte{0x3c});
  (void)w.add_tensor("blk.0.attn_norm.weight", GgmlType::F16, make_shape({3, 2, 2}), f16);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_seed_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  save(dir, "values.gguf", every_value_type());
  save(dir, "tensors32.gguf", with_tensors(32));
  save(dir, "tensors64.gguf", with_tensors(64));
  save(dir, "empty.gguf", GgufWriter());
  return 0;
}
