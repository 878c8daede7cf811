#include "server/api/completion_bodies.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <boost/json/serialize.hpp>

#include "server/scheduler/scheduler.h"

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

json::array llama_probabilities_json(std::span<const GeneratedToken> tokens) {
  const auto entry = [](const TokenLogprob& t) {
    return json::object{{"id", t.token},
                        {"token", sanitize_utf8(t.text)},
                        {"bytes", bytes_json(t.text)},
                        {"logprob", finite_logprob(t.logprob)}};
  };
  json::array out;
  for (const GeneratedToken& t : tokens) {
    json::object o = entry(t.chosen);
    json::array top;
    for (const TokenLogprob& alt : t.top) top.push_back(entry(alt));
    o["top_logprobs"] = std::move(top);
    out.push_back(std::move(o));
  }
  return out;
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

json::object timings_json(const Timings& t) {
  const auto per_token = [](double ms, int64_t n) { return n > 0 ? ms / static_cast<double>(n) : 0.0; };
  const auto per_second = [](double ms, int64_t n) { return ms > 0 ? 1e3 * static_cast<double>(n) / ms : 0.0; };
  json::object o;
  o["cache_n"] = t.cache_n;
  o["prompt_n"] = t.prompt_n;
  o["prompt_ms"] = t.prompt_ms;
  o["prompt_per_token_ms"] = per_token(t.prompt_ms, t.prompt_n);
  o["prompt_per_second"] = per_second(t.prompt_ms, t.prompt_n);
  o["predicted_n"] = t.predicted_n;
  o["predicted_ms"] = t.predicted_ms;
  o["predicted_per_token_ms"] = per_token(t.predicted_ms, t.predicted_n);
  o["predicted_per_second"] = per_second(t.predicted_ms, t.predicted_n);
  return o;
}

const char* llama_stop_type(FinishReason finish, std::string_view stopping_word) {
  if (finish == FinishReason::Length) return "limit";
  return stopping_word.empty() ? "eos" : "word";
}

json::object generation_settings_json(const GenerationJob& job, bool stream) {
  const engine::SamplingParams& s = job.sampling;
  json::array stop;
  for (const std::string& w : job.stop) stop.push_back(json::string(sanitize_utf8(w)));
  json::object o;
  o["seed"] = s.seed;
  o["temperature"] = s.temperature;
  o["top_k"] = s.top_k;
  o["top_p"] = s.top_p;
  o["min_p"] = s.min_p;
  o["repeat_last_n"] = s.penalty_last_n;
  o["repeat_penalty"] = s.repeat_penalty;
  o["presence_penalty"] = s.presence_penalty;
  o["frequency_penalty"] = s.frequency_penalty;
  o["n_predict"] = job.max_tokens;
  o["stop"] = std::move(stop);
  o["ignore_eos"] = job.ignore_eos;
  o["stream"] = stream;
  return o;
}

json::object llama_completion_chunk(std::string_view content, std::span<const int32_t> ids, int64_t n_predicted,
                                    int64_t n_evaluated) {
  json::array tokens;
  for (int32_t id : ids) tokens.push_back(id);
  return json::object{
      {"index", 0},    {"content", sanitize_utf8(content)}, {"tokens", std::move(tokens)},    {"stop", false},
      {"id_slot", -1}, {"tokens_predicted", n_predicted},   {"tokens_evaluated", n_evaluated}};
}

json::object llama_completion_final(const LlamaCompletionMeta& meta, std::string_view content,
                                    std::span<const int32_t> ids, const JobEvent& done) {
  json::array tokens;
  for (int32_t id : ids) tokens.push_back(id);
  json::object o;
  o["index"] = 0;
  o["content"] = sanitize_utf8(content);
  o["tokens"] = std::move(tokens);
  o["id_slot"] = done.slot_id;
  o["stop"] = true;
  o["model"] = meta.model;
  o["tokens_predicted"] = done.usage.completion_tokens;
  o["tokens_evaluated"] = meta.n_prompt;
  o["generation_settings"] = meta.generation_settings;
  o["prompt"] = sanitize_utf8(meta.prompt);
  o["truncated"] = false;  // a prompt that does not fit is a 400, never cut
  o["stop_type"] = llama_stop_type(done.finish, done.stopping_word);
  o["stopping_word"] = sanitize_utf8(done.stopping_word);
  o["timings"] = timings_json(done.timings);
  return o;
}

json::array slots_json(std::span<const SlotState> states) {
  json::array out;
  for (const SlotState& s : states) {
    json::object o{{"id", s.id}, {"n_ctx", s.n_ctx}, {"is_processing", s.is_processing}};
    if (s.is_processing) {
      o["id_task"] = s.id_task;
      o["n_prompt_tokens"] = s.n_prompt_tokens;
      o["n_prompt_tokens_processed"] = s.n_prompt_tokens_processed;
      o["n_prompt_tokens_cache"] = s.n_prompt_tokens_cache;
      o["params"] = json::object{{"n_predict", s.n_predict}, {"temperature", s.temperature},
                                 {"top_k", s.top_k},         {"top_p", s.top_p},
                                 {"min_p", s.min_p},         {"seed", s.seed}};
      // n_remain: tokens the job may still generate (-1: until the context is full).
      const int64_t remain = s.n_predict < 0 ? -1 : std::max<int64_t>(0, s.n_predict - s.n_decoded);
      o["next_token"] =
          json::array{json::object{{"has_next_token", remain != 0}, {"n_remain", remain}, {"n_decoded", s.n_decoded}}};
    }
    out.push_back(std::move(o));
  }
  return out;
}

json::object plain_message(std::string_view content) {
  return json::object{{"role", "assistant"}, {"content", sanitize_utf8(content)}};
}

json::object chat_choice(int64_t index, json::object message, const char* finish_reason, json::value logprobs) {
  json::object choice;
  choice["index"] = index;
  choice["message"] = std::move(message);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason;
  return choice;
}

json::object text_choice(int64_t index, std::string_view text, FinishReason finish, json::value logprobs) {
  json::object choice;
  choice["text"] = sanitize_utf8(text);
  choice["index"] = index;
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = openai_finish_reason(finish);
  return choice;
}

namespace {

std::string completion_body(const ResponseMeta& meta, std::string_view object, json::array choices, const Usage& usage,
                            const Timings* timings) {
  json::object o = meta_fields(meta, object);
  o["choices"] = std::move(choices);
  o["usage"] = usage_json(usage);
  if (timings != nullptr) o["timings"] = timings_json(*timings);
  return json::serialize(o);
}

}  // namespace

std::string chat_completion_body(const ResponseMeta& meta, json::array choices, const Usage& usage,
                                 const Timings* timings) {
  return completion_body(meta, "chat.completion", std::move(choices), usage, timings);
}

std::string text_completion_body(const ResponseMeta& meta, json::array choices, const Usage& usage,
                                 const Timings* timings) {
  return completion_body(meta, "text_completion", std::move(choices), usage, timings);
}

Usage choices_usage(std::span<const Usage> each) {
  Usage total;
  for (const Usage& u : each) {
    total.prompt_tokens = std::max(total.prompt_tokens, u.prompt_tokens);
    total.cached_tokens = std::max(total.cached_tokens, u.cached_tokens);
    total.completion_tokens += u.completion_tokens;
  }
  return total;
}

std::string chat_completion_body(const ResponseMeta& meta, json::object message, const char* finish_reason,
                                 json::value logprobs, const Usage& usage, const Timings* timings) {
  return chat_completion_body(meta, json::array{chat_choice(0, std::move(message), finish_reason, std::move(logprobs))},
                              usage, timings);
}

std::string text_completion_body(const ResponseMeta& meta, std::string_view text, FinishReason finish,
                                 json::value logprobs, const Usage& usage, const Timings* timings) {
  return text_completion_body(meta, json::array{text_choice(0, text, finish, std::move(logprobs))}, usage, timings);
}

json::object chat_chunk(const ResponseMeta& meta, json::object delta, json::value logprobs, json::value finish_reason,
                        bool include_usage, int64_t index) {
  json::object o = meta_fields(meta, "chat.completion.chunk");
  json::object choice;
  choice["index"] = index;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = std::move(finish_reason);
  o["choices"] = json::array{std::move(choice)};
  if (include_usage) o["usage"] = nullptr;
  return o;
}

json::object text_completion_chunk(const ResponseMeta& meta, std::string_view text, json::value logprobs,
                                   json::value finish_reason, bool include_usage, int64_t index) {
  json::object o = meta_fields(meta, "text_completion");
  json::object choice;
  choice["text"] = sanitize_utf8(text);
  choice["index"] = index;
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
