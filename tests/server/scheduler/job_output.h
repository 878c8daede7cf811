// Scheduler test helpers: a scheduler over a test model, and collecting a job's events (its
// text, token ids and final event).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/metrics.h"
#include "server/scheduler/scheduler.h"

namespace cellserve::server {

// A scheduler with its own context for `o.n_slots` slots of `o.n_ctx_per_slot` tokens, 2 threads.
inline std::unique_ptr<Scheduler> make_test_scheduler(std::shared_ptr<const engine::Model> model,
                                                      const engine::tokenizer::Tokenizer& tok,
                                                      const SchedulerOptions& o, Metrics* metrics) {
  engine::ContextParams p;
  p.n_ctx = o.n_ctx_per_slot * o.n_slots;
  p.n_seq_max = scheduler_seq_count(o.n_slots);
  p.n_threads = 2;
  auto ctx = engine::Context::create(std::move(model), p);
  EXPECT_TRUE(ctx.ok()) << ctx.status().to_string();
  return std::make_unique<Scheduler>(std::move(ctx).value(), tok, o, metrics);
}

struct Output {
  std::string text;
  std::vector<int32_t> tokens;  // filled when the job asked for logprobs (token events carry ids)
  JobEvent done;
};

// Waits for every event of the job (at most 60 s between two).
inline Output collect(const std::shared_ptr<JobEvents>& events) {
  Output out;
  for (;;) {
    std::optional<JobEvent> e = events->pop(std::chrono::milliseconds(60000));
    if (!e) {
      ADD_FAILURE() << "no event within 60 s";
      return out;
    }
    if (e->kind == JobEvent::Kind::Done) {
      out.done = std::move(*e);
      return out;
    }
    out.text += e->text;
    for (const GeneratedToken& t : e->tokens) out.tokens.push_back(t.chosen.token);
  }
}

}  // namespace cellserve::server
