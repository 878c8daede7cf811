// `cellserve run -m FILE -p TEXT [-n N] [--temp T] [--seed S] [--threads T]`: generates a
// continuation and prints it as it is produced (stdout); a last line on stderr gives prompt and
// generation speeds. --tokens takes the prompt as ids, --ids prints generated ids instead of text.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/streaming_decoder.h"
#include "engine/tokenizer/tokenizer.h"

namespace cellserve::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct RunOptions {
  ModelOptions model;
  std::string prompt;
  std::string prompt_file;
  std::string tokens;
  int n_predict = 128;
  bool print_ids = false;
  bool ignore_eos = false;
  engine::SamplingParams sampling;
};

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Status run_generation(const RunOptions& o) {
  const int given = (!o.prompt.empty() ? 1 : 0) + (!o.prompt_file.empty() ? 1 : 0) + (!o.tokens.empty() ? 1 : 0);
  if (given != 1) return Status::invalid_argument("give exactly one of -p, --prompt-file or --tokens");
  if (o.n_predict < 0) return Status::invalid_argument("-n must be >= 0");
  CS_ASSIGN_OR_RETURN(auto ctx, o.model.create_context());
  CS_RETURN_IF_ERROR(o.sampling.validate(ctx->model().info().n_vocab));
  CS_ASSIGN_OR_RETURN(auto tok, engine::tokenizer::Tokenizer::from_gguf(ctx->model().file()));

  std::vector<int32_t> prompt;
  if (!o.tokens.empty()) {
    CS_ASSIGN_OR_RETURN(prompt, parse_token_list(o.tokens));
  } else {
    std::string text = o.prompt;
    if (!o.prompt_file.empty()) {
      CS_ASSIGN_OR_RETURN(text, read_file(o.prompt_file));
    }
    prompt = tok.tokenize(text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (prompt.empty()) return Status::invalid_argument("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) + o.n_predict > ctx->params().n_ctx) {
    return Status::invalid_argument("prompt (" + std::to_string(prompt.size()) + " tokens) + -n " +
                                    std::to_string(o.n_predict) + " exceeds --ctx-size " +
                                    std::to_string(ctx->params().n_ctx));
  }

  engine::Sampler sampler(o.sampling);
  for (int32_t t : prompt) sampler.accept(t);
  const auto t_prompt = Clock::now();
  engine::Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  CS_RETURN_IF_ERROR(ctx->decode(batch));
  const double prompt_s = seconds_since(t_prompt);

  engine::tokenizer::StreamingDecoder decoder(tok);
  const auto t_gen = Clock::now();
  int generated = 0;
  for (; generated < o.n_predict; ++generated) {
    const int32_t next = sampler.sample(ctx->logits(0));
    if (next == engine::kNoCandidate) break;  // nothing may be emitted
    if (!o.ignore_eos && tok.is_eog(next)) break;
    sampler.accept(next);
    if (o.print_ids)
      std::printf(generated == 0 ? "%d" : ",%d", next);
    else
      std::fputs(decoder.push(next).c_str(), stdout);
    std::fflush(stdout);
    if (generated + 1 == o.n_predict) {
      ++generated;
      break;
    }
    engine::Batch step;
    step.add(next, static_cast<int32_t>(prompt.size()) + generated, 0, true);
    CS_RETURN_IF_ERROR(ctx->decode(step));
  }
  const double gen_s = seconds_since(t_gen);
  if (!o.print_ids) std::fputs(decoder.flush().c_str(), stdout);
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr,
               "prompt: %zu tokens in %.3f s (%.2f tok/s); generation: %d tokens in %.3f s (%.2f tok/s); %d threads\n",
               prompt.size(), prompt_s, static_cast<double>(prompt.size()) / std::max(prompt_s, 1e-9), generated, gen_s,
               generated / std::max(gen_s, 1e-9), ctx->pool().size());
  return {};
}

}  // namespace

void add_run_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("run", "Generate a continuation of a prompt");
  auto o = std::make_shared<RunOptions>();
  o->model.add_to(cmd);
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text (special tokens such as <|im_start|> are recognised)");
  cmd->add_option("--prompt-file", o->prompt_file, "Read the prompt text from a file");
  cmd->add_option("--tokens", o->tokens, "Prompt as comma-separated token ids");
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate (default 128)");
  cmd->add_flag("--ids", o->print_ids, "Print generated token ids (comma-separated) instead of text");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Do not stop at end-of-generation tokens");
  cmd->add_option("--temp", o->sampling.temperature, "Temperature (0: greedy; default 0.8)");
  cmd->add_option("--top-k", o->sampling.top_k, "Top-k (0: off; default 40)");
  cmd->add_option("--top-p", o->sampling.top_p, "Top-p (1: off; default 0.95)");
  cmd->add_option("--min-p", o->sampling.min_p, "Min-p (0: off; default 0.05)");
  cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1: off)");
  cmd->add_option("--frequency-penalty", o->sampling.frequency_penalty, "Frequency penalty");
  cmd->add_option("--presence-penalty", o->sampling.presence_penalty, "Presence penalty");
  cmd->add_option("--repeat-last-n", o->sampling.penalty_last_n, "Window of tokens the penalties consider");
  cmd->add_option("-s,--seed", o->sampling.seed, "Random seed");
  cmd->callback([o, exit_code] {
    Status s = pin_compute_cpus(o->model.cpus);
    if (s.ok()) s = run_generation(*o);
    if (!s.ok()) {
      std::fflush(stdout);
      print_error("run", s.message());
    }
    *exit_code = s.ok() ? 0 : 1;
  });
}

}  // namespace cellserve::cli
