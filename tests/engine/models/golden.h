// Reading llama.cpp golden files (shared/testdata/golden/*.json, schema golden-logits/1).
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

namespace cellserve::testing {

struct GoldenTop {
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

struct Golden {
  std::string model_file;  // relative to testdata
  std::string architecture;
  int64_t n_vocab = 0;
  bool has_lora = false;
  std::string lora_file;  // relative to testdata
  float lora_scale = 1.0f;
  std::vector<int32_t> prompt_tokens;
  std::vector<GoldenTop> prompt_top;
  std::vector<float> last_prompt_logits;
  std::vector<int32_t> greedy_tokens;
  std::vector<GoldenTop> step_top;
  std::string greedy_text;
};

inline GoldenTop parse_top(const boost::json::value& v) {
  GoldenTop t;
  for (const auto& id : v.at("ids").as_array()) t.ids.push_back(static_cast<int32_t>(id.to_number<int64_t>()));
  for (const auto& l : v.at("logits").as_array()) t.logits.push_back(static_cast<float>(l.to_number<double>()));
  return t;
}

inline Golden read_golden(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto root = boost::json::parse(ss.str()).as_object();
  Golden g;
  g.model_file = std::string(root.at("model").at("file").as_string());
  g.n_vocab = root.at("n_vocab").to_number<int64_t>();
  g.has_lora = !root.at("lora").is_null();
  if (g.has_lora) {
    const auto& lora = root.at("lora").as_object();
    g.lora_file = std::string(lora.at("adapter").at("file").as_string());
    g.lora_scale = static_cast<float>(lora.at("scale").to_number<double>());
  }
  for (const auto& t : root.at("prompt_tokens").as_array())
    g.prompt_tokens.push_back(static_cast<int32_t>(t.to_number<int64_t>()));
  for (const auto& t : root.at("prompt_top").as_array()) g.prompt_top.push_back(parse_top(t));
  for (const auto& l : root.at("last_prompt_logits").as_array())
    g.last_prompt_logits.push_back(static_cast<float>(l.to_number<double>()));
  const auto& greedy = root.at("greedy").as_object();
  for (const auto& t : greedy.at("tokens").as_array())
    g.greedy_tokens.push_back(static_cast<int32_t>(t.to_number<int64_t>()));
  for (const auto& t : greedy.at("step_top").as_array()) g.step_top.push_back(parse_top(t));
  if (greedy.at("text").is_string()) g.greedy_text = std::string(greedy.at("text").as_string());
  return g;
}

}  // namespace cellserve::testing
