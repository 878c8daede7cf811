// POST /v1/embeddings: request parsing (every input shape, encoding_format, dimensions, model),
// the limits on tokens, the base64 and JSON encodings, and the handler end to end with a fake
// writer over a real EmbeddingService on the tiny Qwen3 model of shared/testdata (skipped when
// absent): float and base64 answers agree, token ids embed as their text does, inputs keep
// their order, and every vector has unit length.
#include "server/api/embeddings.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "engine/models/model.h"
#include "server/embeddings/embedding_service.h"
#include "server/metrics.h"
#include "tests/server/api/client_error.h"
#include "tests/support/fake_response_writer.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using embeddings::Embedding;
using testing::FakeResponseWriter;
using testing::post;

constexpr int64_t kWidth = 256;

ApiContext plain_context() {
  ApiContext ctx;
  ctx.model_id = "tiny";
  ctx.n_vocab = 1026;
  return ctx;
}

std::optional<net::ApiError> parse(std::string_view body, EmbeddingRequest* out,
                                   const ApiContext& ctx = plain_context()) {
  return client_error(parse_embedding_request(json::parse(body).as_object(), ctx, kWidth, out));
}

// The error of parsing `body` (a failure of the test when it parses).
net::ApiError parse_error(std::string_view body, const ApiContext& ctx = plain_context()) {
  EmbeddingRequest r;
  auto e = parse(body, &r, ctx);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(net::ApiError{});
}

// Base64 -> bytes, independent of the encoder under test.
std::vector<uint8_t> base64_decode(std::string_view s) {
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const size_t v = kAlphabet.find(c);
    EXPECT_NE(v, std::string_view::npos) << "not base64: " << c;
    if (v == std::string_view::npos) return {};
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Little-endian float32 values of `bytes`.
std::vector<float> floats_of(const std::vector<uint8_t>& bytes) {
  EXPECT_EQ(bytes.size() % 4, 0u);
  std::vector<float> out;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    const uint32_t bits =
        uint32_t{bytes[i]} | uint32_t{bytes[i + 1]} << 8 | uint32_t{bytes[i + 2]} << 16 | uint32_t{bytes[i + 3]} << 24;
    out.push_back(std::bit_cast<float>(bits));
  }
  return out;
}

TEST(EmbeddingRequest, TakesEveryInputShape) {
  EmbeddingRequest one;
  ASSERT_FALSE(parse(R"({"input": "hello"})", &one));
  ASSERT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.inputs[0].text, "hello");
  EXPECT_FALSE(one.base64);

  EmbeddingRequest strings;
  ASSERT_FALSE(parse(R"({"input": ["a", "b", "c"], "model": "tiny"})", &strings));
  ASSERT_EQ(strings.inputs.size(), 3u);
  EXPECT_EQ(strings.inputs[2].text, "c");

  EmbeddingRequest ids;
  ASSERT_FALSE(parse(R"({"input": [1, 2, 1025]})", &ids));
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_FALSE(ids.inputs[0].text);
  EXPECT_EQ(ids.inputs[0].ids, (std::vector<int32_t>{1, 2, 1025}));

  EmbeddingRequest id_arrays;
  ASSERT_FALSE(parse(R"({"input": [[1, 2], [3]], "encoding_format": "base64", "dimensions": 256})", &id_arrays));
  ASSERT_EQ(id_arrays.inputs.size(), 2u);
  EXPECT_EQ(id_arrays.inputs[0].ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(id_arrays.inputs[1].ids, (std::vector<int32_t>{3}));
  EXPECT_TRUE(id_arrays.base64);
}

TEST(EmbeddingRequest, RefusesBadInputsNamingTheField) {
  for (const char* body :
       {R"({})", R"({"input": null})", R"({"input": ""})", R"({"input": []})", R"({"input": 5})",
        R"({"input": {"text": "a"}})", R"({"input": ["a", ""]})", R"({"input": ["a", 1]})", R"({"input": [[1], "a"]})",
        R"({"input": [[]]})", R"({"input": [1, "a"]})", R"({"input": [1.5]})", R"({"input": [-1]})",
        R"({"input": [1026]})", R"({"input": [[1], [2, 4000000000]]})"}) {
    const net::ApiError e = parse_error(body);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_EQ(e.param, "input") << body;
    EXPECT_EQ(e.type, "invalid_request_error") << body;
  }
  EXPECT_NE(parse_error(R"({"input": [1026]})").message.find("out of range [0, 1026)"), std::string::npos);
  EXPECT_NE(parse_error(R"({"input": ["a", ""]})").message.find("input[1]"), std::string::npos);

  std::string many = R"({"input": [)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) many += (i > 0 ? ",\"x\"" : "\"x\"");
  many += "]}";
  const net::ApiError e = parse_error(many);
  EXPECT_EQ(e.param, "input");
  EXPECT_NE(e.message.find("at most 2048"), std::string::npos) << e.message;
}

TEST(EmbeddingRequest, RefusesOtherFormatsDimensionsAndModels) {
  EXPECT_EQ(parse_error(R"({"input": "a", "encoding_format": "binary"})").param, "encoding_format");
  EXPECT_EQ(parse_error(R"({"input": "a", "encoding_format": 1})").param, "encoding_format");
  const net::ApiError dims = parse_error(R"({"input": "a", "dimensions": 64})");
  EXPECT_EQ(dims.param, "dimensions");
  EXPECT_NE(dims.message.find("256"), std::string::npos) << dims.message;
  EXPECT_EQ(parse_error(R"({"input": "a", "dimensions": 0})").param, "dimensions");

  const net::ApiError other = parse_error(R"({"input": "a", "model": "gpt-4"})");
  EXPECT_EQ(other.http_status, 404);
  EXPECT_EQ(other.param, "model");
  ApiContext any = plain_context();
  any.accept_any_model = true;
  EmbeddingRequest r;
  EXPECT_FALSE(parse(R"({"input": "a", "model": "text-embedding-3-small"})", &r, any));
}

TEST(EmbeddingBase64, IsLittleEndianFloat32) {
  EXPECT_EQ(encode_embedding_base64(std::vector<float>{1.0f}), "AACAPw==");  // 00 00 80 3f
  EXPECT_EQ(encode_embedding_base64(std::vector<float>{}), "");
  const std::vector<float> v{0.5f, -2.25f, 1e-30f, 3.4e38f, 0.0f};
  EXPECT_EQ(floats_of(base64_decode(encode_embedding_base64(v))), v);
}

TEST(EmbeddingsResponse, IsOpenAIsShape) {
  const std::vector<Embedding> data{{{0.6f, 0.8f}, 1}, {{1.0f, 0.0f}, 1}};
  std::string body;
  ASSERT_TRUE(embeddings_response("tiny", data, /*base64=*/false, 7, &body).ok());
  const json::value v = json::parse(body);
  EXPECT_EQ(v.at("object"), "list");
  EXPECT_EQ(v.at("model"), "tiny");
  EXPECT_EQ(v.at("usage").at("prompt_tokens"), 7);
  EXPECT_EQ(v.at("usage").at("total_tokens"), 7);
  const json::array& items = v.at("data").as_array();
  ASSERT_EQ(items.size(), 2u);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i].at("object"), "embedding");
    EXPECT_EQ(items[i].at("index"), static_cast<int64_t>(i));
    const json::array& e = items[i].at("embedding").as_array();
    ASSERT_EQ(e.size(), 2u);
    for (size_t k = 0; k < e.size(); ++k)
      EXPECT_EQ(static_cast<float>(e[k].to_number<double>()), data[i].values[k]);  // shortest form reads back
  }

  std::string b64;
  ASSERT_TRUE(embeddings_response("tiny", data, /*base64=*/true, 7, &b64).ok());
  const json::value w = json::parse(b64);
  EXPECT_EQ(floats_of(base64_decode(w.at("data").at(1).at("embedding").as_string())), data[1].values);

  const std::vector<Embedding> bad{{{std::numeric_limits<float>::quiet_NaN()}, 1}};
  auto e = client_error(embeddings_response("tiny", bad, false, 1, &body));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 500);
}

TEST(EmbeddingsHandler, WithoutEmbeddingsAnswers501) {
  ApiContext ctx = plain_context();
  Metrics metrics;
  ctx.metrics = &metrics;
  FakeResponseWriter w;
  handle_embeddings(ctx, post("/v1/embeddings", R"({"input": "hello"})"), w);
  EXPECT_EQ(w.status, 501);
  EXPECT_EQ(w.json_body().at("error").at("type"), "not_supported_error");
  EXPECT_NE(metrics.prometheus_text().find(R"(endpoint="/v1/embeddings",status="501"} 1)"), std::string::npos);
}

// The handler over a real EmbeddingService on the tiny Qwen3 model.
class EmbeddingsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = engine::tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
    ctx_.tokenizer = tok_.get();
    ctx_.model_id = "qwen3-tiny";
    ctx_.n_vocab = tok_->n_vocab();
    ctx_.metrics = &metrics_;
    use_service(embeddings::Pooling::Last, 64);
  }

  void use_service(embeddings::Pooling pooling, int64_t n_ctx) {
    embeddings::EmbeddingServiceOptions o;
    o.embedder.pooling = pooling;
    o.embedder.n_ctx = n_ctx;
    o.embedder.kv_type = engine::GgmlType::F32;
    service_ = std::make_unique<embeddings::EmbeddingService>(model_, o);
    ctx_.embeddings = service_.get();
  }

  // The answer to `body`, whose status must be `status`.
  json::value call(const std::string& body, int status = 200) {
    FakeResponseWriter w;
    handle_embeddings(ctx_, post("/v1/embeddings", body), w);
    EXPECT_EQ(w.status, status) << body << " -> " << w.body;
    return w.json_body();
  }

  // data[i].embedding of a float answer.
  static std::vector<float> vector_of(const json::value& answer, size_t i) {
    std::vector<float> out;
    for (const json::value& x : answer.at("data").at(i).at("embedding").as_array())
      out.push_back(static_cast<float>(x.to_number<double>()));
    return out;
  }

  std::shared_ptr<const engine::Model> model_;
  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
  std::unique_ptr<embeddings::EmbeddingService> service_;
  Metrics metrics_;
  ApiContext ctx_;
};

TEST_F(EmbeddingsServerTest, FloatAndBase64AgreeAndHaveUnitLength) {
  const json::value f = call(R"({"input": "Once upon a time", "model": "qwen3-tiny"})");
  const std::vector<float> v = vector_of(f, 0);
  ASSERT_EQ(static_cast<int64_t>(v.size()), model_->info().n_embd);
  double n2 = 0;
  for (float x : v) n2 += static_cast<double>(x) * x;
  EXPECT_NEAR(n2, 1.0, 1e-5);
  const auto n_tokens = static_cast<int64_t>(tok_->tokenize("Once upon a time", true, true).size());
  EXPECT_EQ(f.at("usage").at("prompt_tokens"), n_tokens);
  EXPECT_EQ(f.at("usage").at("total_tokens"), n_tokens);
  EXPECT_EQ(f.at("model"), "qwen3-tiny");

  const json::value b = call(R"({"input": "Once upon a time", "encoding_format": "base64"})");
  EXPECT_EQ(floats_of(base64_decode(b.at("data").at(0).at("embedding").as_string())), v);
  EXPECT_EQ(b.at("usage"), f.at("usage"));
}

TEST_F(EmbeddingsServerTest, TokenIdsEmbedAsTheirTextAndInputsKeepTheirOrder) {
  const std::vector<std::string> texts{"Lily", "Once upon a time, there was a little girl.", "red ball"};
  std::vector<std::vector<float>> alone;
  for (const std::string& t : texts) alone.push_back(vector_of(call(json::serialize(json::object{{"input", t}})), 0));
  EXPECT_NE(alone[0], alone[1]);

  json::array arr;
  for (const std::string& t : texts) arr.emplace_back(t);
  const json::value together = call(json::serialize(json::object{{"input", arr}}));
  ASSERT_EQ(together.at("data").as_array().size(), texts.size());
  int64_t total = 0;
  json::array id_arrays;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(together.at("data").at(i).at("index"), static_cast<int64_t>(i));
    const std::vector<float> v = vector_of(together, i);
    ASSERT_EQ(v.size(), alone[i].size());
    for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], alone[i][k], 1e-5f) << "input " << i << " [" << k << "]";
    const std::vector<int32_t> ids = tok_->tokenize(texts[i], true, true);
    total += static_cast<int64_t>(ids.size());
    id_arrays.emplace_back(json::array(ids.begin(), ids.end()));
  }
  EXPECT_EQ(together.at("usage").at("prompt_tokens"), total);

  // One token-id array is one input, as its text.
  const json::value one_ids = call(json::serialize(json::object{{"input", id_arrays[1]}}));
  EXPECT_EQ(vector_of(one_ids, 0), alone[1]);
  // An array of them, several.
  const json::value ids = call(json::serialize(json::object{{"input", id_arrays}}));
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<float> v = vector_of(ids, i);
    for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], vector_of(together, i)[k], 1e-6f);
  }
}

TEST_F(EmbeddingsServerTest, LimitsAndPoolingNone) {
  // 64 tokens per input: 65 token ids are one too many; 8 x 64 together at most.
  json::array long_ids;
  for (int i = 0; i < 65; ++i) long_ids.emplace_back(5);
  const json::value too_long = call(json::serialize(json::object{{"input", long_ids}}), 400);
  EXPECT_EQ(too_long.at("error").at("param"), "input");
  EXPECT_EQ(too_long.at("error").at("code"), "context_length_exceeded");

  json::array many;
  json::array sixty(long_ids.begin(), long_ids.begin() + 60);
  for (int i = 0; i < 9; ++i) many.emplace_back(sixty);
  const json::value too_many = call(json::serialize(json::object{{"input", many}}), 400);
  EXPECT_EQ(too_many.at("error").at("code"), "context_length_exceeded");
  many.pop_back();
  EXPECT_EQ(call(json::serialize(json::object{{"input", many}})).at("data").as_array().size(), 8u);

  EXPECT_EQ(call(R"({"input": [1, 99999]})", 400).at("error").at("param"), "input");
  EXPECT_EQ(call(R"({"input": "a", "dimensions": 3})", 400).at("error").at("param"), "dimensions");
  call("not json", 400);

  use_service(embeddings::Pooling::None, 64);
  EXPECT_NE(call(R"({"input": "a"})", 400).at("error").at("message").as_string().find("none"), json::string::npos);
}

}  // namespace
}  // namespace cellserve::server
