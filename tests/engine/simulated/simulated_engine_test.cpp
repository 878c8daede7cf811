// The simulated model under the real scheduler and serve stack: deterministic answers that
// honour max_tokens, stop strings and cancellation, at most `slots` sequences per step, and the
// prompt and answer token counts its pacing is computed from. Rates are set high so the tests
// run fast; no test measures time.
#include "engine/simulated/simulated_model.h"

#include <gtest/gtest.h>

#include "server/metrics.h"
#include "server/serve_stack.h"
#include "tests/server/scheduler/job_output.h"

namespace cellserve::engine::simulated {
namespace {

using server::FinishReason;
using server::GenerationJob;
using server::Output;

class SimulatedEngine : public ::testing::Test {
 protected:
  void SetUp() override { build({1e6, 1e5, 4}); }

  void build(const SimulateOptions& o) {
    scheduler_.reset();
    auto model = SimulatedModel::create(o);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
    server::SchedulerOptions so;
    so.n_slots = o.slots;
    so.n_ctx_per_slot = 1024;
    so.prefix_cache_bytes = 0;  // every prompt token is processed, so the counts below are exact
    scheduler_ = server::make_test_scheduler(model_, *tok_, so, &metrics_);
  }

  GenerationJob job(const std::string& prompt, int64_t max_tokens = -1) {
    GenerationJob j;
    j.prompt = tok_->tokenize(prompt, false, true);
    j.max_tokens = max_tokens;
    return j;
  }

  Output run(GenerationJob j) {
    auto events = scheduler_->submit(std::move(j));
    EXPECT_TRUE(events.ok()) << events.status().to_string();
    return events.ok() ? server::collect(*events) : Output{};
  }

  // The answer the model must give after `prompt`.
  std::string expected_answer(const std::string& prompt) {
    AnswerState s = AnswerText::start();
    bool continued = false;
    for (int32_t t : tok_->tokenize(prompt, false, true)) s = model_->text().after(s, t, &continued);
    return model_->text().answer(s, *tok_);
  }

  server::Metrics metrics_;
  std::shared_ptr<const SimulatedModel> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<server::Scheduler> scheduler_;
};

TEST_F(SimulatedEngine, EqualPromptsGiveEqualAnswersThatEndByThemselves) {
  const std::string prompt = "<|im_start|>user\nHow is the weather?<|im_end|>\n<|im_start|>assistant\n";
  const Output a = run(job(prompt));
  const Output b = run(job(prompt));
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.text, expected_answer(prompt));
  EXPECT_EQ(a.done.finish, FinishReason::Stop);
  EXPECT_TRUE(a.text.ends_with(".")) << a.text;
  EXPECT_EQ(a.done.usage.prompt_tokens, static_cast<int64_t>(tok_->tokenize(prompt, false, true).size()));
  // The answer is made of whole tokens of the tokenizer: reading it back gives the same count.
  EXPECT_EQ(a.done.usage.completion_tokens, static_cast<int64_t>(tok_->tokenize(a.text, false, false).size()));
  const std::vector<std::string> other = {"a different question", "yet another one", "and one more"};
  int differ = 0;
  for (const std::string& p : other) differ += run(job(p)).text != a.text ? 1 : 0;
  EXPECT_EQ(differ, 3);
}

// canned=1 (a test knob): every prompt gets the same answer, as a device that returns a fixed
// text would; the hub's spot checks must catch it (fleet/hub/spot_checks.h).
TEST_F(SimulatedEngine, CannedAnswersEveryPromptAlike) {
  SimulateOptions o{1e6, 1e5, 4};
  o.canned = true;
  build(o);
  const Output a = run(job("How is the weather?"));
  EXPECT_FALSE(a.text.empty());
  EXPECT_EQ(a.done.finish, FinishReason::Stop);
  for (const char* p : {"a different question", "yet another one"}) EXPECT_EQ(run(job(p)).text, a.text);
  build({1e6, 1e5, 4});  // an honest simulator answers that prompt otherwise
  EXPECT_NE(run(job("How is the weather?")).text, a.text);
}

TEST_F(SimulatedEngine, MaxTokensCutsTheAnswer) {
  const Output out = run(job("count to five", 5));
  EXPECT_EQ(out.done.finish, FinishReason::Length);
  EXPECT_EQ(out.done.usage.completion_tokens, 5);
  EXPECT_TRUE(expected_answer("count to five").starts_with(out.text)) << out.text;
}

TEST_F(SimulatedEngine, IgnoreEosRunsToMaxTokens) {
  GenerationJob j = job("keep going", 300);
  j.ignore_eos = true;
  const Output out = run(std::move(j));
  EXPECT_EQ(out.done.finish, FinishReason::Length);
  EXPECT_EQ(out.done.usage.completion_tokens, 300);
}

TEST_F(SimulatedEngine, StopStringsCutBeforeTheMatch) {
  const std::string full = expected_answer("tell a story");
  const size_t second_space = full.find(' ', full.find(' ') + 1);
  ASSERT_NE(second_space, std::string::npos) << full;
  const std::string stop = full.substr(second_space, 4);  // " " and the third word's first letters
  GenerationJob j = job("tell a story");
  j.stop = {stop};
  const Output out = run(std::move(j));
  EXPECT_EQ(out.done.finish, FinishReason::Stop);
  EXPECT_EQ(out.text, full.substr(0, full.find(stop)));
}

TEST_F(SimulatedEngine, NeverRunsMoreSequencesThanSlots) {
  build({1e6, 200, 2});  // slow enough that queued jobs wait for a slot
  std::vector<std::shared_ptr<server::JobEvents>> running;
  int64_t prompt_tokens = 0;
  for (int i = 0; i < 6; ++i) {
    GenerationJob j = job("request number " + std::to_string(i), 6);
    j.ignore_eos = true;
    prompt_tokens += static_cast<int64_t>(j.prompt.size());
    auto e = scheduler_->submit(std::move(j));
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    running.push_back(*e);
  }
  int64_t answer_tokens = 0;
  for (auto& e : running) {
    const Output out = server::collect(e);
    EXPECT_EQ(out.done.finish, FinishReason::Length);
    EXPECT_EQ(out.done.usage.completion_tokens, 6);
    answer_tokens += out.done.usage.completion_tokens;
  }
  EXPECT_GE(model_->max_sequences_per_pass(), 1);
  EXPECT_LE(model_->max_sequences_per_pass(), 2);
  // What the pacing is computed from: every answer token but each job's last (sampled, never fed
  // back) written once; prompt tokens read at most once (a slot may reuse the shared
  // "request number " cells of the job it ran before, depending on the order jobs take slots).
  EXPECT_GT(model_->prompt_tokens(), 0);
  EXPECT_LE(model_->prompt_tokens(), prompt_tokens);
  EXPECT_EQ(model_->answer_tokens(), answer_tokens - 6);
}

TEST_F(SimulatedEngine, CancellingFreesTheSlot) {
  build({1e6, 100, 1});
  GenerationJob j = job("a long answer", 900);
  j.ignore_eos = true;
  auto events = scheduler_->submit(std::move(j));
  ASSERT_TRUE(events.ok()) << events.status().to_string();
  // Running (its first text arrived), then cancelled as the API layer does when the client goes.
  std::optional<server::JobEvent> first = (*events)->pop(std::chrono::milliseconds(60000));
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->kind, server::JobEvent::Kind::Text);
  (*events)->cancel();
  const Output cancelled = server::collect(*events);
  EXPECT_EQ(cancelled.done.finish, FinishReason::Cancelled);
  // The only slot serves the next request.
  EXPECT_EQ(run(job("next", 3)).done.usage.completion_tokens, 3);
}

// docs/fleet.md's token model: lowercase English about one token per 2 bytes, anything else
// (here capitals and digits) one per byte.
TEST_F(SimulatedEngine, TokenCountsFollowTheDocumentedModel) {
  const std::string english =
      "the quick brown fox jumps over the lazy dog while the farmer watches from his porch and drinks tea";
  const size_t english_tokens = tok_->tokenize(english, false, false).size();
  EXPECT_GE(static_cast<double>(english.size()) / english_tokens, 1.8) << english_tokens << " tokens";
  EXPECT_LE(static_cast<double>(english.size()) / english_tokens, 3.0) << english_tokens << " tokens";
  EXPECT_EQ(tok_->tokenize("ABC123", false, false).size(), 6u);
}

TEST(SimulatedServeStack, IsMarkedSimulated) {
  auto model = SimulatedModel::create({1e6, 1e5, 2});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  server::ServeStackOptions so;
  so.model = *model;
  so.parallel = 2;
  so.alias = "sim";
  server::Metrics metrics;
  auto stack = server::load_serve_stack(so, &metrics, [](const std::string&) {});
  ASSERT_TRUE(stack.ok()) << stack.status().to_string();
  EXPECT_EQ((*stack)->api.owned_by, "cellserve-simulated");
  EXPECT_EQ((*stack)->api.model_id, "sim");
  EXPECT_TRUE((*stack)->api.chat_template.has_value());
  EXPECT_TRUE((*stack)->api.model_meta.at("simulated").as_bool());
  EXPECT_EQ((*stack)->scheduler->options().n_slots, 2);

  server::ServeStackOptions tuned = so;
  tuned.autotune = true;
  EXPECT_FALSE(server::load_serve_stack(tuned, &metrics, [](const std::string&) {}).ok());
}

}  // namespace
}  // namespace cellserve::engine::simulated
