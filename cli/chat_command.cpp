// `cellserve chat -m FILE`: an interactive terminal chat. Each turn renders the whole
// conversation with the model's chat template, reuses the KV cells of the tokens the previous
// turn already computed, and streams the reply. Lines starting with '/' are commands
// (/reset, /exit); end of input ends the chat.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <span>
#include <string>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/chat/template_selection.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/streaming_decoder.h"
#include "engine/tokenizer/tokenizer.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct ChatOptions {
  ModelOptions model;
  std::string system;
  std::vector<std::string> vars;  // KEY=JSON template variables
  int n_predict = 512;
  bool verbose = false;
  bool special_in_content = false;  // as `serve --special-in-content`
  engine::chat::TemplateChoice chat_template;
  engine::SamplingParams sampling;
};

Status parse_vars(const std::vector<std::string>& vars, json::object* out) {
  for (const std::string& v : vars) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) return Status::invalid_argument("--var " + v + ": expected KEY=JSON");
    boost::system::error_code ec;
    json::value value = json::parse(v.substr(eq + 1), ec);
    if (ec) value = json::string(v.substr(eq + 1));  // a bare word is a string
    (*out)[v.substr(0, eq)] = std::move(value);
  }
  return {};
}

// One chat session: the conversation, the tokens whose KV cells are cached, and the model.
class ChatSession {
 public:
  ChatSession(const ChatOptions& o, std::unique_ptr<engine::Context> ctx, engine::tokenizer::Tokenizer tok,
              engine::chat::ChatTemplate tmpl, engine::chat::GgufChatTemplate meta)
      : o_(o), ctx_(std::move(ctx)), tok_(std::move(tok)), tmpl_(std::move(tmpl)), meta_(std::move(meta)) {}

  void reset() {
    messages_.clear();
    if (!o_.system.empty()) messages_.push_back(json::object{{"role", "system"}, {"content", o_.system}});
    (void)ctx_->seq_rm(0);
    cached_.clear();
  }

  Status turn(const std::string& user_text, const json::object& vars) {
    messages_.push_back(json::object{{"role", "user"}, {"content", user_text}});
    engine::chat::ChatRequest req;
    req.messages = messages_;
    req.extra_vars = vars;
    req.bos_token = meta_.bos_token;
    req.eos_token = meta_.eos_token;
    CS_ASSIGN_OR_RETURN(const engine::chat::MarkedText rendered, tmpl_.apply_marked(req));
    const std::string& prompt_text = rendered.text;
    // As the server: special-token text typed into a message stays text.
    const std::span<const TextSpan> data =
        o_.special_in_content ? std::span<const TextSpan>() : std::span<const TextSpan>(rendered.user_spans);
    // A template that writes the BOS text itself must not get a second BOS from the tokenizer.
    const bool template_has_bos = !meta_.bos_token.empty() && prompt_text.rfind(meta_.bos_token, 0) == 0 &&
                                  !overlaps(data, 0, meta_.bos_token.size());
    const std::vector<int32_t> prompt = tok_.tokenize_prompt(prompt_text, !template_has_bos, data);
    if (o_.verbose) {
      std::fprintf(stderr, "[prompt tokens:");
      for (int32_t t : prompt) std::fprintf(stderr, " %d", t);
      std::fprintf(stderr, "]\n");
    }
    if (static_cast<int64_t>(prompt.size()) + o_.n_predict > ctx_->params().n_ctx) {
      return Status::resource_exhausted("the conversation (" + std::to_string(prompt.size()) +
                                        " tokens) no longer fits --ctx-size; use /reset");
    }
    CS_RETURN_IF_ERROR(prefill(prompt));

    engine::Sampler sampler(o_.sampling);
    for (int32_t t : prompt) sampler.accept(t);
    engine::tokenizer::StreamingDecoder decoder(tok_);
    std::string reply;
    std::vector<int32_t> tokens = prompt;
    for (int i = 0; i < o_.n_predict; ++i) {
      const int32_t next = sampler.sample(ctx_->logits(0));
      if (next == engine::kNoCandidate || tok_.is_eog(next)) break;
      sampler.accept(next);
      const std::string piece = decoder.push(next);
      reply += piece;
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
      engine::Batch step;
      step.add(next, static_cast<int32_t>(tokens.size()), 0, true);
      CS_RETURN_IF_ERROR(ctx_->decode(step));
      tokens.push_back(next);
    }
    const std::string tail = decoder.flush();
    reply += tail;
    std::fputs((tail + "\n").c_str(), stdout);
    std::fflush(stdout);
    cached_ = std::move(tokens);
    messages_.push_back(json::object{{"role", "assistant"}, {"content", reply}});
    return {};
  }

 private:
  // Computes the prompt's tokens, reusing the cached ones it starts with.
  Status prefill(const std::vector<int32_t>& prompt) {
    size_t common = 0;
    while (common < cached_.size() && common < prompt.size() && cached_[common] == prompt[common]) ++common;
    if (common == prompt.size()) --common;  // the last prompt token must be decoded for logits
    if (!ctx_->seq_rm(0, static_cast<int32_t>(common), -1).ok()) {
      // A recurrent model cannot be rewound to an arbitrary position: start over.
      CS_RETURN_IF_ERROR(ctx_->seq_rm(0));
      common = 0;
    }
    engine::Batch batch;
    for (size_t i = common; i < prompt.size(); ++i)
      batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
    return ctx_->decode(batch);
  }

  const ChatOptions& o_;
  std::unique_ptr<engine::Context> ctx_;
  engine::tokenizer::Tokenizer tok_;
  engine::chat::ChatTemplate tmpl_;
  engine::chat::GgufChatTemplate meta_;
  json::array messages_;
  std::vector<int32_t> cached_;
};

Status run_chat(const ChatOptions& o) {
  if (o.n_predict < 1) return Status::invalid_argument("-n must be at least 1");
  json::object vars;
  CS_RETURN_IF_ERROR(parse_vars(o.vars, &vars));
  CS_RETURN_IF_ERROR(engine::chat::validate_template_choice(o.chat_template));
  CS_ASSIGN_OR_RETURN(auto ctx, o.model.create_context());
  CS_RETURN_IF_ERROR(o.sampling.validate(ctx->model().info().n_vocab));
  CS_ASSIGN_OR_RETURN(auto tok, engine::tokenizer::Tokenizer::from_gguf(ctx->model().file()));
  CS_ASSIGN_OR_RETURN(engine::chat::SelectedTemplate chat,
                      engine::chat::select_chat_template(o.chat_template, ctx->model().file()));
  if (chat.origin != engine::chat::TemplateOrigin::Model) {
    std::fprintf(stderr, "cellserve chat: %s\n", engine::chat::describe_selected_template(chat).c_str());
  }
  ChatSession session(o, std::move(ctx), std::move(tok), std::move(*chat.tmpl), std::move(chat.meta));
  session.reset();
  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) std::fprintf(stderr, "cellserve chat: /reset starts over, /exit or Ctrl-D ends\n");
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      session.reset();
      continue;
    }
    if (line.empty()) continue;
    const Status s = session.turn(line, vars);
    if (!s.ok()) {
      print_error("chat", s.message());
      if (s.code() != StatusCode::ResourceExhausted) return Status(s.code(), "");
    }
  }
  return {};
}

}  // namespace

void add_chat_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("chat", "Chat with a model in the terminal, using its chat template");
  auto o = std::make_shared<ChatOptions>();
  o->model.add_to(cmd);
  add_chat_template_options(cmd, &o->chat_template);
  cmd->add_option("--system", o->system, "System message");
  cmd->add_option("--var", o->vars, "Template variable KEY=JSON (e.g. enable_thinking=false); repeatable");
  cmd->add_option("-n,--n-predict", o->n_predict, "Most tokens per reply (default 512)");
  cmd->add_flag("--verbose", o->verbose, "Print each turn's prompt token ids on stderr");
  cmd->add_flag("--special-in-content", o->special_in_content,
                "Parse special-token text typed into messages as control tokens (as llama.cpp does)");
  cmd->add_option("--temp", o->sampling.temperature, "Temperature (0: greedy; default 0.8)");
  cmd->add_option("--top-k", o->sampling.top_k, "Top-k (default 40)");
  cmd->add_option("--top-p", o->sampling.top_p, "Top-p (default 0.95)");
  cmd->add_option("--min-p", o->sampling.min_p, "Min-p (default 0.05)");
  cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1: off)");
  cmd->add_option("-s,--seed", o->sampling.seed, "Random seed");
  cmd->callback([o, exit_code] {
    Status s = pin_compute_cpus(o->model.cpus);
    if (s.ok()) s = run_chat(*o);
    if (!s.ok() && !s.message().empty()) print_error("chat", s.message());
    *exit_code = s.ok() ? 0 : 1;
  });
}

}  // namespace cellserve::cli
