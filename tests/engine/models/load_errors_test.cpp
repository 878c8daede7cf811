// Model loading refuses bad files with an error naming the tensor or key.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/gguf/gguf_writer.h"
#include "engine/models/model.h"

namespace cellserve::engine {
namespace {

std::string write_model(const std::string& name, const GgufWriter& w) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

GgufWriter tiny_llama(int64_t embd = 32, bool with_ffn_down = true, int64_t down_rows = 32) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("llama"));
  w.set("llama.embedding_length", GgufValue::u32(static_cast<uint32_t>(embd)));
  w.set("llama.block_count", GgufValue::u32(1));
  w.set("llama.feed_forward_length", GgufValue::u32(64));
  w.set("llama.attention.head_count", GgufValue::u32(2));
  auto f32 = [&](const std::string& n, std::initializer_list<int64_t> dims) {
    const Shape s = make_shape(dims);
    (void)w.add_tensor(n, GgmlType::F32, s, std::vector<std::byte>(static_cast<size_t>(s.elements()) * 4));
  };
  f32("token_embd.weight", {embd, 10});
  f32("output_norm.weight", {embd});
  f32("blk.0.attn_norm.weight", {embd});
  f32("blk.0.attn_q.weight", {embd, embd});
  f32("blk.0.attn_k.weight", {embd, embd});
  f32("blk.0.attn_v.weight", {embd, embd});
  f32("blk.0.attn_output.weight", {embd, embd});
  f32("blk.0.ffn_norm.weight", {embd});
  f32("blk.0.ffn_gate.weight", {embd, 64});
  f32("blk.0.ffn_up.weight", {embd, 64});
  if (with_ffn_down) f32("blk.0.ffn_down.weight", {64, down_rows});
  return w;
}

TEST(ModelLoad, ValidTinyModelLoads) {
  auto m = load_model(write_model("cs_tiny_llama.gguf", tiny_llama()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->info().n_vocab, 10);
  EXPECT_EQ((*m)->info().kv_shape.head_dim_k, 16);
}

TEST(ModelLoad, MissingTensorIsNamed) {
  auto m = load_model(write_model("cs_tiny_llama_missing.gguf", tiny_llama(32, false)));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("tensor blk.0.ffn_down.weight is missing"), std::string::npos)
      << m.status().message();
}

TEST(ModelLoad, WrongShapeIsNamed) {
  auto m = load_model(write_model("cs_tiny_llama_shape.gguf", tiny_llama(32, true, 48)));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.0.ffn_down.weight: expected shape [64, 32], got [64, 48]"),
            std::string::npos)
      << m.status().message();
}

TEST(ModelLoad, MissingHyperparameterAndUnknownArchitecture) {
  GgufWriter w = tiny_llama();
  w.remove("llama.block_count");
  auto m = load_model(write_model("cs_tiny_llama_hp.gguf", w));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("missing hyperparameter llama.block_count"), std::string::npos);

  GgufWriter u = tiny_llama();
  u.set("general.architecture", GgufValue::string("mamba"));
  m = load_model(write_model("cs_tiny_unknown.gguf", u));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(m.status().message().find("architecture 'mamba' is not supported"), std::string::npos);
}

}  // namespace
}  // namespace cellserve::engine
