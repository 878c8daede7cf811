// `cellserve logits -m FILE --tokens IDS [--top K] [--full-last] [--json]`: teacher-forced
// evaluation. Feeds the tokens (in batches of --batch-size) and prints, for every position, the
// top-K token ids with their logits, best first; --full-last adds the whole last logits vector.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct LogitsOptions {
  ModelOptions model;
  std::string tokens;
  int top = 10;
  bool full_last = false;
  bool as_json = false;
};

std::vector<int32_t> top_ids(std::span<const float> logits, int k) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto n = static_cast<std::ptrdiff_t>(std::min<size_t>(static_cast<size_t>(k), ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  ids.resize(static_cast<size_t>(n));
  return ids;
}

Status run_logits(const LogitsOptions& o) {
  if (o.top < 1) return Status::invalid_argument("--top must be at least 1");
  CS_ASSIGN_OR_RETURN(const std::vector<int32_t> tokens, parse_token_list(o.tokens));
  ModelOptions mo = o.model;
  mo.ctx_size = std::max<int64_t>(mo.ctx_size, static_cast<int64_t>(tokens.size()));
  CS_ASSIGN_OR_RETURN(auto ctx, mo.create_context());
  engine::Batch batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], static_cast<int32_t>(i), 0, true);
  CS_RETURN_IF_ERROR(ctx->decode(batch));

  const int64_t n_vocab = ctx->model().info().n_vocab;
  json::array positions;
  for (int64_t i = 0; i < ctx->n_outputs(); ++i) {
    const auto logits = ctx->logits(i);
    const auto ids = top_ids(logits, o.top);
    if (o.as_json) {
      json::array jid, jlog;
      for (int32_t id : ids) {
        jid.push_back(id);
        jlog.push_back(static_cast<double>(logits[static_cast<size_t>(id)]));
      }
      positions.push_back(json::object{{"ids", jid}, {"logits", jlog}});
    } else {
      std::printf("%lld:", static_cast<long long>(i));
      for (int32_t id : ids) std::printf(" %d:%.6g", id, static_cast<double>(logits[static_cast<size_t>(id)]));
      std::printf("\n");
    }
  }
  const auto last = ctx->logits(ctx->n_outputs() - 1);
  if (o.as_json) {
    json::object out{{"n_vocab", n_vocab}, {"positions", positions}};
    if (o.full_last) {
      json::array all;
      for (float v : last) all.push_back(static_cast<double>(v));
      out["last_logits"] = all;
    }
    std::cout << json::serialize(out) << "\n";
  } else if (o.full_last) {
    std::printf("last:");
    for (float v : last) std::printf(" %.9g", static_cast<double>(v));
    std::printf("\n");
  }
  return {};
}

}  // namespace

void add_logits_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("logits", "Teacher-forced logits of a token sequence (for comparing engines)");
  auto o = std::make_shared<LogitsOptions>();
  o->model.add_to(cmd);
  cmd->add_option("--tokens", o->tokens, "Comma-separated token ids")->required();
  cmd->add_option("--top", o->top, "Token ids to print per position (default 10)");
  cmd->add_flag("--full-last", o->full_last, "Also print every logit of the last position");
  cmd->add_flag("--json", o->as_json, "Print one JSON object");
  cmd->callback([o, exit_code] {
    Status s = pin_compute_cpus(o->model.cpus);
    if (s.ok()) s = run_logits(*o);
    if (!s.ok()) print_error("logits", s.message());
    *exit_code = s.ok() ? 0 : 1;
  });
}

}  // namespace cellserve::cli
