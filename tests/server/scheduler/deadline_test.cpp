// Deadlines in the scheduler, on the paced simulated model (engine/simulated): a job past its
// deadline ends with DeadlineExceeded — from the queue before its first token, or mid-answer
// after some — never with a finish that passes for a whole answer, and its slot serves the next
// job. The pace makes the long jobs here take tens of seconds, far beyond their deadlines; no test
// measures time.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "engine/simulated/simulated_model.h"
#include "server/metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/server/scheduler/job_output.h"

namespace cellserve::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr double kFastPrefill = 1e6;  // prompts read at once
constexpr double kDecodeTps = 50;     // 20 ms a token: 4,000 tokens take 80 s
constexpr int64_t kLongAnswer = 4000;

class SchedulerDeadline : public ::testing::Test {
 protected:
  void build(double request_timeout_seconds, int slots = 1) {
    scheduler_.reset();
    auto model = engine::simulated::SimulatedModel::create({kFastPrefill, kDecodeTps, slots});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = engine::tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
    SchedulerOptions o;
    o.n_slots = slots;
    o.n_ctx_per_slot = 8192;
    o.request_timeout_seconds = request_timeout_seconds;
    scheduler_ = make_test_scheduler(model_, *tok_, o, &metrics_);
  }

  // A job that cannot end by itself within any deadline below.
  GenerationJob long_job(std::optional<double> deadline_seconds = std::nullopt) {
    GenerationJob j;
    j.prompt = tok_->tokenize("tell me a long story", false, true);
    j.max_tokens = kLongAnswer;
    j.ignore_eos = true;
    if (deadline_seconds) {
      j.deadline =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*deadline_seconds));
    }
    return j;
  }

  std::shared_ptr<JobEvents> submit(GenerationJob j) {
    auto events = scheduler_->submit(std::move(j));
    EXPECT_TRUE(events.ok()) << events.status().to_string();
    return events.ok() ? *events : nullptr;
  }

  // Waits until `events` has produced text: the job holds a slot and is generating.
  static void await_first_text(JobEvents& events) {
    std::optional<JobEvent> e = events.pop(milliseconds(60000));
    ASSERT_TRUE(e.has_value());
    ASSERT_EQ(e->kind, JobEvent::Kind::Text);
  }

  Metrics metrics_;
  std::shared_ptr<const engine::simulated::SimulatedModel> model_;
  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerDeadline, PassedWhileQueuedEndsBeforeTheFirstTokenThoughEverySlotIsBusy) {
  build(0);
  auto blocker = submit(long_job());
  await_first_text(*blocker);
  // Already past its deadline when queued: it must end without waiting for the slot.
  auto late = submit(long_job(-1.0));
  const Output out = collect(late);
  EXPECT_EQ(out.done.finish, FinishReason::DeadlineExceeded);
  EXPECT_EQ(out.done.usage.completion_tokens, 0);
  EXPECT_TRUE(out.text.empty());
  EXPECT_NE(out.done.error.message().find("deadline"), std::string::npos) << out.done.error.message();
  EXPECT_NE(out.done.error.message().find("before its first token"), std::string::npos) << out.done.error.message();
  // The blocker is still running: the queued job was ended without its slot.
  EXPECT_EQ(scheduler_->busy_slots(), 1);
  blocker->cancel();
  EXPECT_EQ(collect(blocker).done.finish, FinishReason::Cancelled);
}

TEST_F(SchedulerDeadline, PassedMidAnswerIsNeverAWholeAnswer) {
  build(0);
  auto events = submit(long_job(0.5));
  const Output out = collect(events);
  EXPECT_EQ(out.done.finish, FinishReason::DeadlineExceeded);
  EXPECT_TRUE(ended_without_answer(out.done.finish));
  EXPECT_GT(out.done.usage.completion_tokens, 0);
  EXPECT_LT(out.done.usage.completion_tokens, kLongAnswer);
  EXPECT_NE(out.done.error.message().find("the request's deadline (0.5 s) passed after"), std::string::npos)
      << out.done.error.message();
  EXPECT_NE(out.done.error.message().find("incomplete"), std::string::npos) << out.done.error.message();
}

TEST_F(SchedulerDeadline, TheServerTimeoutAppliesToEveryJob) {
  build(0.5);
  const Output out = collect(submit(long_job()));
  EXPECT_EQ(out.done.finish, FinishReason::DeadlineExceeded);
  EXPECT_NE(out.done.error.message().find("(0.5 s)"), std::string::npos) << out.done.error.message();
}

TEST_F(SchedulerDeadline, AJobsOwnDeadlineShortensTheServerTimeout) {
  build(600);
  const Output out = collect(submit(long_job(0.5)));
  EXPECT_EQ(out.done.finish, FinishReason::DeadlineExceeded);
  EXPECT_NE(out.done.error.message().find("(0.5 s)"), std::string::npos) << out.done.error.message();
}

TEST_F(SchedulerDeadline, ZeroTimeoutMeansNoLimit) {
  build(0);
  GenerationJob j = long_job();
  j.max_tokens = 3;
  const Output out = collect(submit(std::move(j)));
  EXPECT_EQ(out.done.finish, FinishReason::Length);
  EXPECT_EQ(out.done.usage.completion_tokens, 3);
}

TEST_F(SchedulerDeadline, FreesTheSlotForTheNextJob) {
  build(600);
  const Output timed_out = collect(submit(long_job(0.5)));
  ASSERT_EQ(timed_out.done.finish, FinishReason::DeadlineExceeded);
  // No more work is done for it: the only slot serves the next job (which would otherwise wait
  // over a minute behind it), and only that job's tokens are generated from here on.
  const int64_t answered_before = model_->answer_tokens();
  GenerationJob next = long_job();
  next.max_tokens = 3;
  const Output out = collect(submit(std::move(next)));
  EXPECT_EQ(out.done.finish, FinishReason::Length);
  EXPECT_EQ(out.done.usage.completion_tokens, 3);
  EXPECT_LE(model_->answer_tokens() - answered_before, 3);
}

}  // namespace
}  // namespace cellserve::server
