#include "server/api/responses.h"

#include <cmath>
#include <random>

#include <boost/json/serialize.hpp>

namespace cellserve::server {

namespace json = boost::json;

namespace {

constexpr char kFingerprint[] = "cellserve";
// JSON has no -infinity; OpenAI reports -9999.0 for tokens that could not be drawn.
constexpr double kMinLogprob = -9999.0;

double finite_logprob(float lp) { return std::isfinite(lp) ? static_cast<double>(lp) : kMinLogprob; }

json::array bytes_json(std::string_view s) {
  json::array a;
  a.reserve(s.size());
  for (unsigned char c : s) a.push_back(static_cast<int64_t>(c));
  return a;
}

// The length of the well-formed UTF-8 sequence at s[i], or 0 with *bad set to the length of
// its maximal ill-formed prefix (at least 1).
size_t utf8_sequence(std::string_view s, size_t i, size_t* bad) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *bad = 1;
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    const size_t j = i + k;
    const bool ok = j < s.size() && static_cast<unsigned char>(s[j]) >= (k == 1 ? lo : 0x80) &&
                    static_cast<unsigned char>(s[j]) <= (k == 1 ? hi : 0xBF);
    if (!ok) {
      *bad = k;
      return 0;
    }
  }
  return len;
}

json::object meta_fields(const ResponseMeta& meta, std::string_view object) {
  json::object o;
  o["id"] = meta.id;
  o["object"] = object;
  o["created"] = static_cast<int64_t>(meta.created);
  o["model"] = meta.model;
  o["system_fingerprint"] = kFingerprint;
  return o;
}

}  // namespace

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t bad = 0;
    const size_t len = utf8_sequence(s, i, &bad);
    if (len > 0) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t bad = 0;
    const size_t len = utf8_sequence(s, i, &bad);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string make_response_id(std::string_view prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (int half = 0; half < 2; ++half) {
    uint64_t r = rng();
    for (int k = 0; k < 12; ++k, r >>= 4) id += kHex[r & 0xF];
  }
  return id;
}

const char* openai_finish_reason(FinishReason r) { return r == FinishReason::Length ? "length" : "stop"; }

json::object usage_json(const Usage& u) {
  json::object o;
  o["prompt_tokens"] = u.prompt_tokens;
  o["completion_tokens"] = u.completion_tokens;
  o["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  o["prompt_tokens_details"] = json::object{{"cached_tokens", u.cached_tokens}};
  return o;
}

json::object chat_logprobs_json(std::span<const GeneratedToken> tokens) {
  json::array content;
  for (const GeneratedToken& t : tokens) {
    json::object entry;
    entry["token"] = sanitize_utf8(t.chosen.text);
    entry["logprob"] = finite_logprob(t.chosen.logprob);
    entry["bytes"] = bytes_json(t.chosen.text);
    json::array top;
    for (const TokenLogprob& alt : t.top) {
      top.push_back(json::object{{"token", sanitize_utf8(alt.text)},
                                 {"logprob", finite_logprob(alt.logprob)},
                                 {"bytes", bytes_json(alt.text)}});
    }
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return json::object{{"content", std::move(content)}};
}

json::object legacy_logprobs_json(std::span<const GeneratedToken> tokens, int64_t* text_offset) {
  json::array texts, lps, tops, offsets;
  for (const GeneratedToken& t : tokens) {
    const std::string text = sanitize_utf8(t.chosen.text);
    texts.push_back(json::string(text));
    lps.push_back(finite_logprob(t.chosen.logprob));
    json::object top;
    for (const TokenLogprob& alt : t.top) top[sanitize_utf8(alt.text)] = finite_logprob(alt.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(*text_offset);
    *text_offset += static_cast<int64_t>(t.chosen.text.size());
  }
  return json::object{{"tokens", std::move(texts)},
                      {"token_logprobs", std::move(lps)},
                      {"top_logprobs", std::move(tops)},
                      {"text_offset", std::move(offsets)}};
}

std::string chat_completion_body(const ResponseMeta& meta, std::string_view content, FinishReason finish,
                                 json::value logprobs, const Usage& usage) {
  json::object o = meta_fields(meta, "chat.completion");
  json::object choice;
  choice["index"] = 0;
  choice["message"] = json::object{{"role", "assistant"}, {"content", sanitize_utf8(content)}};
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = openai_finish_reason(finish);
  o["choices"] = json::array{std::move(choice)};
  o["usage"] = usage_json(usage);
  return json::serialize(o);
}

std::string text_completion_body(const ResponseMeta& meta, std::string_view text, FinishReason finish,
                                 json::value logprobs, const Usage& usage) {
  json::object o = meta_fields(meta, "text_completion");
  json::object choice;
  choice["text"] = sanitize_utf8(text);
  choice["index"] = 0;
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = openai_finish_reason(finish);
  o["choices"] = json::array{std::move(choice)};
  o["usage"] = usage_json(usage);
  return json::serialize(o);
}

json::object chat_chunk(const ResponseMeta& meta, json::object delta, json::value logprobs, json::value finish_reason,
                        bool include_usage) {
  json::object o = meta_fields(meta, "chat.completion.chunk");
  json::object choice;
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = std::move(finish_reason);
  o["choices"] = json::array{std::move(choice)};
  if (include_usage) o["usage"] = nullptr;
  return o;
}

json::object text_completion_chunk(const ResponseMeta& meta, std::string_view text, json::value logprobs,
                                   json::value finish_reason, bool include_usage) {
  json::object o = meta_fields(meta, "text_completion");
  json::object choice;
  choice["text"] = sanitize_utf8(text);
  choice["index"] = 0;
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = std::move(finish_reason);
  o["choices"] = json::array{std::move(choice)};
  if (include_usage) o["usage"] = nullptr;
  return o;
}

json::object usage_chunk(const ResponseMeta& meta, std::string_view object, const Usage& usage) {
  json::object o = meta_fields(meta, object);
  o["choices"] = json::array();
  o["usage"] = usage_json(usage);
  return o;
}

std::string sse_data(const json::value& v) { return "data: " + json::serialize(v) + "\n\n"; }

}  // namespace cellserve::server
