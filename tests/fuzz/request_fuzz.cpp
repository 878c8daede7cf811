// libFuzzer target: the bodies of /v1/chat/completions and /v1/completions. Every input goes
// through parse_json_object, then both parse_chat_request and parse_completion_request (so
// response_format schemas, logit_bias, stop, lora, messages and prompt shapes are all reached);
// what parses is then built into a prompt: the chat messages rendered by a small chatml template
// and tokenized, the completion prompt tokenized with special tokens parsed. A parse error is an
// expected result; the target looks for crashes, leaks and UB. The hub's deployment endpoint reads
// the same bodies first (fleet/hub/gateway_request.h): model, size, prefix, then routes them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fleet/hub/gateway_request.h"
#include "server/api/request_parsing.h"
#include "tests/fuzz/fuzz_vocab.h"

namespace {

using cellserve::server::ApiContext;

const ApiContext& fuzz_context() {
  static const ApiContext ctx = [] {
    ApiContext c;
    c.tokenizer = &cellserve::fuzz::fuzz_tokenizer();
    c.n_vocab = c.tokenizer->n_vocab();
    c.n_ctx = 512;
    c.model_id = "fuzz-model";
    auto t = cellserve::engine::chat::ChatTemplate::parse(
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "{%- for c in m.tool_calls | default([]) %}<tool_call>{{ c | tojson }}</tool_call>{% endfor %}<|im_end|>\n"
        "{%- endfor %}{% if tools %}{{ tools | tojson }}{% endif %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    if (!t.ok()) {
      std::fprintf(stderr, "the fixed template does not parse: %s\n", t.status().to_string().c_str());
      std::abort();
    }
    c.chat_template = std::move(t).value();
    c.chat_meta.eos_token = "<|im_end|>";
    return c;
  }();
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellserve::server;
  const ApiContext& ctx = fuzz_context();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto hub_chat = cellserve::fleet::read_gateway_request(text, "/v1/chat/completions");
  if (const auto& g = hub_chat; g.ok()) {
    std::vector<cellserve::fleet::ReplicaView> fleet(3);
    for (int i = 0; i < 3; ++i) {
      fleet[i].index = i;
      fleet[i].slots = 2;
      fleet[i].busy = i;
      fleet[i].prefill_tps = 100.0 * i;
      fleet[i].decode_tps = 10;
    }
    (void)cellserve::fleet::choose_replica(fleet, g->work);
    (void)cellserve::fleet::with_model(text, "fuzz-model");
  }
  boost::json::object body;
  if (!parse_json_object(text, &body).ok()) return 0;

  // The hub never refuses a body that the replica takes (its token limit is read by one function).
  ChatCompletionRequest chat;
  const bool chat_ok = parse_chat_request(body, ctx, &chat).ok();
  if (chat_ok && !hub_chat.ok()) std::abort();
  if (chat_ok && build_chat_prompt(ctx, &chat).ok()) {
    int64_t max_tokens = 0;
    (void)fit_context(static_cast<int64_t>(chat.job.prompt.size()), chat.max_tokens, -1, ctx.n_ctx, "messages",
                      &max_tokens);
  }
  CompletionRequest completion;
  const bool completion_ok = parse_completion_request(body, ctx, &completion).ok();
  if (completion_ok && !cellserve::fleet::read_gateway_request(text, "/v1/completions").ok()) std::abort();
  if (completion_ok && build_completion_prompt(ctx, &completion).ok()) {
    int64_t max_tokens = 0;
    (void)fit_context(static_cast<int64_t>(completion.job.prompt.size()), completion.max_tokens, 16, ctx.n_ctx,
                      "prompt", &max_tokens);
  }
  return 0;
}
