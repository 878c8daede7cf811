// The scheduler against real tiny models: batching never changes greedy tokens, prefixes are
// reused, and cancellation, queue bounds, stops and lengths behave.
#include "server/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/grammar/output_constraint.h"
#include "server/metrics.h"
#include "tests/server/scheduler/job_output.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

using std::chrono::milliseconds;

class SchedulerTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = engine::load_model(testing::testdata_path(std::string("models/") + GetParam()));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = engine::tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
  }

  std::unique_ptr<Scheduler> make(SchedulerOptions o) { return make_test_scheduler(model_, *tok_, o, &metrics_); }

  GenerationJob greedy(const std::string& prompt, int64_t max_tokens) {
    GenerationJob j;
    j.prompt = tok_->tokenize(prompt, true, true);
    j.sampling.temperature = 0;
    j.max_tokens = max_tokens;
    j.logprobs = 0;
    j.ignore_eos = true;
    return j;
  }

  std::shared_ptr<const engine::Model> model_;
  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
  Metrics metrics_;
};

const std::vector<std::string> kPrompts = {
    "Once upon a time there was a little dog",
    "The capital of France is",
    "Lily and Ben went to the park to play with their ball",
    "A",
    "One day, a big bird flew over the town and saw",
    "Tom had a red car",
};

TEST_P(SchedulerTest, TimingsAndSlotStatesAreMeasured) {
  SchedulerOptions o;
  o.n_slots = 2;
  o.n_ctx_per_slot = 256;
  auto s = make(o);
  ASSERT_EQ(s->slot_states().size(), 2u);
  EXPECT_FALSE(s->slot_states()[1].is_processing);
  EXPECT_EQ(s->slot_states()[1].n_ctx, 256);
  const Output first = collect(*s->submit(greedy(kPrompts[0], 6)));
  // Idle as soon as the answer is in: the state is updated before the Done event is sent.
  for (const SlotState& st : s->slot_states()) EXPECT_FALSE(st.is_processing) << st.id;
  const Timings& t = first.done.timings;
  EXPECT_EQ(t.predicted_n, first.done.usage.completion_tokens);
  EXPECT_EQ(t.prompt_n + t.cache_n, first.done.usage.prompt_tokens);
  EXPECT_GT(t.prompt_ms, 0);
  EXPECT_GT(t.predicted_ms, 0);
  EXPECT_GE(first.done.slot_id, 0);
  // The same prompt again reuses the cached prefix: fewer prompt tokens computed. (Not on the
  // recurrent qwen35: its state is kept only at snapshot positions, none inside this prompt.)
  const Output second = collect(*s->submit(greedy(kPrompts[0], 6)));
  if (std::string_view(GetParam()).find("qwen35") == std::string_view::npos) {
    EXPECT_GT(second.done.timings.cache_n, 0);
  }
  EXPECT_EQ(second.done.timings.prompt_n + second.done.timings.cache_n, second.done.usage.prompt_tokens);
  // A stop string is reported as the word that ended the job: greedy, the longer job's text
  // starts with the first job's.
  ASSERT_FALSE(first.text.empty());
  GenerationJob stopped = greedy(kPrompts[0], 24);
  stopped.stop = {first.text};
  const Output cut = collect(*s->submit(std::move(stopped)));
  EXPECT_EQ(cut.done.finish, FinishReason::Stop);
  EXPECT_EQ(cut.done.stopping_word, first.text);
  EXPECT_EQ(cut.text, "");
}

TEST_P(SchedulerTest, ConcurrentGreedyJobsMatchSoloRuns) {
  SchedulerOptions o;
  o.n_slots = 4;
  o.n_ctx_per_slot = 256;
  o.prefill_chunk = 7;  // several steps per prompt, interleaved with decodes
  o.prefix_cache_bytes = 0;
  std::vector<Output> solo;
  {
    auto s = make(o);
    for (const std::string& p : kPrompts) solo.push_back(collect(*s->submit(greedy(p, 24))));
  }
  auto s = make(o);
  std::vector<std::shared_ptr<JobEvents>> running;
  for (const std::string& p : kPrompts) {
    auto e = s->submit(greedy(p, 24));
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    running.push_back(*e);
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const Output out = collect(running[i]);
    EXPECT_EQ(out.tokens, solo[i].tokens) << kPrompts[i];
    EXPECT_EQ(out.text, solo[i].text);
    EXPECT_EQ(out.done.finish, FinishReason::Length);
    EXPECT_EQ(out.done.usage.completion_tokens, 24);
  }
}

TEST_P(SchedulerTest, ReusesACachedPrefix) {
  SchedulerOptions o;
  o.n_slots = 2;
  o.n_ctx_per_slot = 256;
  o.prefill_chunk = 8;
  o.snapshot_stride = 8;
  const std::string shared =
      "Once upon a time there was a little dog who liked to run in the park with his friends every day. ";
  auto cold_job = greedy(shared + "One day he", 12);
  Output cold;
  {
    auto s = make(o);
    cold = collect(*s->submit(cold_job));
    EXPECT_EQ(cold.done.usage.cached_tokens, 0);
  }
  auto s = make(o);
  const Output first = collect(*s->submit(greedy(shared + "The cat", 12)));
  EXPECT_EQ(first.done.usage.cached_tokens, 0);
  const Output warm = collect(*s->submit(cold_job));
  EXPECT_EQ(warm.tokens, cold.tokens);
  const int64_t n_shared = static_cast<int64_t>(tok_->tokenize(shared, true, true).size());
  EXPECT_GT(warm.done.usage.cached_tokens, 0);
  EXPECT_LE(warm.done.usage.cached_tokens, n_shared + 1);
  if (model_->info().recurrent_shape.n_layer == 0) {
    EXPECT_GE(warm.done.usage.cached_tokens, n_shared - 2);
  }
  // The same prompt again reuses everything but its last token.
  const Output again = collect(*s->submit(cold_job));
  EXPECT_EQ(again.tokens, cold.tokens);
  if (model_->info().recurrent_shape.n_layer == 0) {
    EXPECT_EQ(again.done.usage.cached_tokens, static_cast<int64_t>(cold_job.prompt.size()) - 1);
  }
}

// The n choices of one request are jobs with the same prompt, queued together: the later ones
// wait for the first one's prompt tokens and share its cells (its snapshots on a recurrent
// model) instead of computing them again, and still give the solo run's tokens.
TEST_P(SchedulerTest, ConcurrentSamePromptsShareTheComputedPrefix) {
  SchedulerOptions o;
  o.n_slots = 4;
  o.n_ctx_per_slot = 256;
  o.prefill_chunk = 8;
  o.snapshot_stride = 8;
  o.prefix_cache_bytes = 0;  // only the running slots can share
  const auto job = greedy(
      "Once upon a time there was a little dog who liked to run in the park with his friends every day. One day he",
      12);
  const int64_t n_prompt = static_cast<int64_t>(job.prompt.size());
  Output solo;
  {
    auto s = make(o);
    solo = collect(*s->submit(job));
  }
  auto s = make(o);
  std::vector<std::shared_ptr<JobEvents>> running;
  for (int i = 0; i < 3; ++i) {
    auto e = s->submit(job);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    running.push_back(*e);
  }
  const bool recurrent = model_->info().recurrent_shape.n_layer > 0;
  for (size_t i = 0; i < running.size(); ++i) {
    const Output out = collect(running[i]);
    EXPECT_EQ(out.tokens, solo.tokens) << "choice " << i;
    const int64_t cached = out.done.usage.cached_tokens;
    if (i == 0) {
      EXPECT_EQ(cached, 0);
    } else if (recurrent) {
      EXPECT_EQ(cached, (n_prompt - 1) / 8 * 8) << "choice " << i;  // the last snapshot inside the prompt
    } else {
      EXPECT_EQ(cached, n_prompt - 1) << "choice " << i;
    }
    EXPECT_EQ(out.done.timings.prompt_n + out.done.timings.cache_n, n_prompt);
  }
}

// Issue 43 item 9: one partition (a fleet hub gives each API key its own) never reuses another's
// computed prefix, cached or running, so its cached_tokens cannot confirm the other's prompt.
TEST_P(SchedulerTest, PrefixesAreReusedOnlyWithinTheirPartition) {
  SchedulerOptions o;
  o.n_slots = 2;
  o.n_ctx_per_slot = 256;
  o.prefill_chunk = 8;
  o.snapshot_stride = 8;
  const std::string prompt =
      "Once upon a time there was a little dog who liked to run in the park with his friends every day. One day he";
  auto s = make(o);
  GenerationJob a = greedy(prompt, 4);
  a.cache_partition = 11;
  const Output first = collect(*s->submit(a));
  EXPECT_EQ(first.done.usage.cached_tokens, 0);
  GenerationJob b = greedy(prompt, 4);
  b.cache_partition = 22;
  const Output other = collect(*s->submit(b));
  EXPECT_EQ(other.done.usage.cached_tokens, 0) << "another partition's prompt must not be confirmed";
  EXPECT_EQ(other.tokens, first.tokens);
  const Output shared = collect(*s->submit(greedy(prompt, 4)));
  EXPECT_EQ(shared.done.usage.cached_tokens, 0) << "the shared partition is a partition too";
  const Output again = collect(*s->submit(a));
  EXPECT_GT(again.done.usage.cached_tokens, 0) << "the same partition still reuses its own";
  EXPECT_EQ(again.tokens, first.tokens);

  // Running slots share their tokens only within a partition too.
  o.n_slots = 4;
  o.prefix_cache_bytes = 0;
  auto t = make(o);
  GenerationJob c = greedy(prompt, 12);
  c.cache_partition = 33;
  GenerationJob d = c;
  d.cache_partition = 44;
  auto running_c = *t->submit(c);
  auto running_d = *t->submit(d);
  EXPECT_EQ(collect(running_c).done.usage.cached_tokens, 0);
  EXPECT_EQ(collect(running_d).done.usage.cached_tokens, 0);
}

TEST_P(SchedulerTest, CancelFreesTheSlot) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_ctx_per_slot = 2048;
  auto s = make(o);
  auto job = greedy("Once upon a time", 2000);
  auto events = *s->submit(job);
  ASSERT_TRUE(events->pop(milliseconds(30000)).has_value());  // generation started
  events->cancel();
  std::optional<JobEvent> e;
  while ((e = events->pop(milliseconds(30000))) && e->kind != JobEvent::Kind::Done) {}
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->finish, FinishReason::Cancelled);
  EXPECT_LT(e->usage.completion_tokens, 2000);
  // The slot serves the next job.
  const Output next = collect(*s->submit(greedy("Tom had", 3)));
  EXPECT_EQ(next.done.usage.completion_tokens, 3);
}

TEST_P(SchedulerTest, QueueBoundRefusesWithResourceExhausted) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.max_queue = 1;
  o.n_ctx_per_slot = 1024;
  auto s = make(o);
  std::vector<std::shared_ptr<JobEvents>> accepted;
  int refused = 0;
  for (int i = 0; i < 4; ++i) {
    auto r = s->submit(greedy("Once upon a time", 900));
    if (r.ok()) {
      accepted.push_back(*r);
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::ResourceExhausted);
      ++refused;
    }
  }
  EXPECT_GE(refused, 1);
  for (auto& e : accepted) e->cancel();
}

TEST_P(SchedulerTest, StopStringIsNeverEmitted) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_ctx_per_slot = 256;
  auto s = make(o);
  const Output full = collect(*s->submit(greedy("Once upon a time", 30)));
  ASSERT_GT(full.text.size(), 12u);
  // A stop string from the middle of the greedy text: the output ends right before it.
  const std::string stop = full.text.substr(full.text.size() / 2, 3);
  auto job = greedy("Once upon a time", 30);
  job.stop = {stop};
  const Output cut = collect(*s->submit(job));
  EXPECT_EQ(cut.done.finish, FinishReason::Stop);
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
}

TEST_P(SchedulerTest, RejectsPromptsThatDoNotFit) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_ctx_per_slot = 16;
  auto s = make(o);
  auto r = s->submit(greedy("Once upon a time there was a little dog who liked to run", 16));
  EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
  GenerationJob empty;
  EXPECT_EQ(s->submit(empty).status().code(), StatusCode::InvalidArgument);
}

TEST_P(SchedulerTest, LongPromptIsReadBetweenDecodeSteps) {
  SchedulerOptions o;
  o.n_slots = 2;
  o.n_ctx_per_slot = 4096;
  o.prefill_chunk = 4;  // the long prompt needs 150 steps
  o.prefix_cache_bytes = 0;
  auto s = make(o);
  auto short_job = greedy("Once upon a time", 10);
  auto short_events = *s->submit(short_job);
  ASSERT_TRUE(short_events->pop(milliseconds(30000)).has_value());  // generating
  GenerationJob long_job = greedy("", 4);
  long_job.prompt.clear();
  for (int i = 0; i < 600; ++i) long_job.prompt.push_back(static_cast<int32_t>(100 + i % 200));
  auto long_events = *s->submit(long_job);
  // The short job ends (one token per step) long before the 600-token prompt is read (4 per step).
  const Output short_out = collect(short_events);
  EXPECT_EQ(short_out.done.finish, FinishReason::Length);
  EXPECT_FALSE(long_events->pop(milliseconds(0)).has_value()) << "the long prompt blocked the short stream";
  const Output long_out = collect(long_events);
  EXPECT_EQ(long_out.done.usage.prompt_tokens, 600);
  EXPECT_EQ(long_out.done.usage.completion_tokens, 4);
}

TEST_P(SchedulerTest, BannedTokensAreNeverEmitted) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_ctx_per_slot = 256;
  auto s = make(o);
  const int32_t n_vocab = tok_->n_vocab();
  for (const float temperature : {0.0f, 0.8f}) {
    SCOPED_TRACE(temperature);
    // Every token banned: the job ends at once, without a token (it used to emit token 0).
    auto job = greedy("Once upon a time", 8);
    job.sampling.temperature = temperature;
    for (int32_t id = 0; id < n_vocab; ++id) job.sampling.logit_bias.emplace_back(id, -INFINITY);
    const Output none = collect(*s->submit(job));
    EXPECT_EQ(none.done.finish, FinishReason::Stop);
    EXPECT_EQ(none.done.usage.completion_tokens, 0);
    EXPECT_TRUE(none.tokens.empty());
    EXPECT_EQ(none.text, "");
    // All but one banned: only that one comes out.
    const int32_t allowed = n_vocab / 2;
    job.sampling.logit_bias.erase(job.sampling.logit_bias.begin() + allowed);
    const Output one = collect(*s->submit(job));
    EXPECT_EQ(one.done.finish, FinishReason::Length);
    EXPECT_EQ(one.tokens, std::vector<int32_t>(8, allowed));
  }
}

TEST_P(SchedulerTest, JsonThatCannotFitTheBudgetEndsWithLength) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_ctx_per_slot = 256;
  auto s = make(o);
  auto constraint = engine::grammar::OutputConstraint::from_schema(boost::json::parse(R"({"type": "object",
      "properties": {"risk_level_of_this_transaction": {"type": "integer"}},
      "required": ["risk_level_of_this_transaction"], "additionalProperties": false})"));
  ASSERT_TRUE(constraint.ok()) << constraint.status().to_string();
  auto job = greedy("Once upon a time", 3);
  job.ignore_eos = false;
  job.constraint = *constraint;
  // Three tokens cannot hold the 36-byte shortest document: the output is cut, so "length",
  // never "stop", and whatever was generated is returned as it is.
  const Output cut = collect(*s->submit(job));
  EXPECT_EQ(cut.done.finish, FinishReason::Length);
  EXPECT_LE(cut.done.usage.completion_tokens, 3);
  EXPECT_EQ(cut.tokens.size(), static_cast<size_t>(cut.done.usage.completion_tokens));
  EXPECT_EQ(tok_->detokenize(cut.tokens, false, false), cut.text);
  // With room the document completes and ends with "stop".
  job.max_tokens = 120;
  const Output whole = collect(*s->submit(job));
  EXPECT_EQ(whole.done.finish, FinishReason::Stop) << whole.text;
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(whole.text, ec);
  ASSERT_FALSE(ec) << whole.text;
  EXPECT_TRUE(doc.at("risk_level_of_this_transaction").is_int64()) << whole.text;
}

std::shared_ptr<const engine::grammar::OutputConstraint> any_object_under(
    const engine::grammar::GrammarLimits& limits) {
  auto c = engine::grammar::OutputConstraint::from_schema(boost::json::parse(R"({"type":"object"})"), limits);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? *c : nullptr;
}

// A constrained job whose mask would pass its work budget ends alone, with an error naming the
// limit; the plain job in the same steps runs to its length.
TEST_P(SchedulerTest, JobPastItsMaskBudgetEndsAloneWithAnError) {
  SchedulerOptions o;
  o.n_slots = 2;
  o.n_ctx_per_slot = 256;
  o.prefix_cache_bytes = 0;
  auto s = make(o);
  engine::grammar::GrammarLimits limits;
  limits.max_mask_work = 1;  // the first mask already needs more
  GenerationJob constrained = greedy("Answer in JSON:", 16);
  constrained.constraint = any_object_under(limits);
  auto plain_events = s->submit(greedy("Once upon a time", 16));
  auto constrained_events = s->submit(constrained);
  ASSERT_TRUE(plain_events.ok() && constrained_events.ok());

  const Output failed = collect(*constrained_events);
  EXPECT_EQ(failed.done.finish, FinishReason::Error);
  EXPECT_EQ(failed.done.error.code(), StatusCode::InvalidArgument);
  EXPECT_NE(failed.done.error.message().find("the limit (max_mask_work) of 1 "), std::string::npos)
      << failed.done.error.message();
  EXPECT_EQ(failed.done.usage.completion_tokens, 0);
  EXPECT_TRUE(failed.text.empty());

  const Output done = collect(*plain_events);
  EXPECT_EQ(done.done.finish, FinishReason::Length);
  EXPECT_EQ(done.done.usage.completion_tokens, 16);
}

TEST_P(SchedulerTest, ConstrainedJobWithinItsBudgetProducesJson) {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_ctx_per_slot = 256;
  auto s = make(o);
  GenerationJob job = greedy("Answer in JSON:", 24);
  job.ignore_eos = false;
  job.constraint = any_object_under(engine::grammar::GrammarLimits{});
  const Output out = collect(*s->submit(job));
  EXPECT_EQ(out.done.finish, FinishReason::Stop) << out.done.error.to_string();
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(out.text, ec);
  EXPECT_FALSE(ec) << out.text;
  EXPECT_TRUE(v.is_object()) << out.text;
}

INSTANTIATE_TEST_SUITE_P(TinyModels, SchedulerTest,
                         ::testing::Values("qwen3-tiny-f32.gguf", "qwen35-tiny-f32.gguf", "stories260K.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace cellserve::server
