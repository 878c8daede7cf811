// Deadlines through the OpenAI handlers, on a serve stack over the paced simulated model
// (engine/simulated): a deadline that passes before the first token is a 504 "timeout" error,
// streamed or not; one that passes mid-answer is a 504 for a whole answer and an SSE error event
// then [DONE] for a stream, never a normal-looking finish; X-Request-Timeout shortens --timeout
// and frees the slot; a bad header is a 400 naming it. The pace makes the long requests here take
// over a minute, far beyond their deadlines; no test measures time.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include <boost/json/parse.hpp>

#include "engine/simulated/simulated_model.h"
#include "server/api/handlers.h"
#include "server/metrics.h"
#include "server/serve_stack.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using testing::FakeResponseWriter;
using testing::post;

constexpr char kChat[] = "/v1/chat/completions";
constexpr char kCompletions[] = "/v1/completions";
// A request that cannot end by itself within its deadline: 4,000 tokens at 50 a second.
constexpr char kLongChat[] =
    R"({"messages":[{"role":"user","content":"tell me a long story"}],"max_tokens":4000,"ignore_eos":true)";

class DeadlineHandlers : public ::testing::Test {
 protected:
  void SetUp() override { build(600); }

  void build(double timeout_seconds) {
    stack_.reset();
    auto model = engine::simulated::SimulatedModel::create({1e6, 50, 1});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    ServeStackOptions o;
    o.model = *model;
    o.parallel = 1;
    o.ctx_size = 8192;
    o.timeout = timeout_seconds;
    auto stack = load_serve_stack(o, &metrics_, [](const std::string&) {});
    ASSERT_TRUE(stack.ok()) << stack.status().to_string();
    stack_ = std::move(stack).value();
  }

  FakeResponseWriter call(const char* path, const std::string& body, const std::string& timeout_header = "") {
    net::HttpRequest req = post(path, body);
    if (!timeout_header.empty()) req.headers["x-request-timeout"] = timeout_header;
    FakeResponseWriter w;
    if (std::string_view(path) == kChat) {
      handle_chat_completions(stack_->api, req, w);
    } else {
      handle_completions(stack_->api, req, w);
    }
    return w;
  }

  // Occupies the only slot with a job that runs for over a minute; returns once it generates.
  std::shared_ptr<JobEvents> occupy_the_slot() {
    GenerationJob j;
    j.prompt = stack_->tokenizer->tokenize("a blocker", false, true);
    j.max_tokens = 4000;
    j.ignore_eos = true;
    auto events = stack_->scheduler->submit(std::move(j));
    EXPECT_TRUE(events.ok()) << events.status().to_string();
    if (!events.ok()) return nullptr;
    EXPECT_TRUE((*events)->pop(std::chrono::milliseconds(60000)).has_value());
    return *events;
  }

  bool counted(const std::string& endpoint, int status) const {
    return metrics_.prometheus_text().find("endpoint=\"" + endpoint + "\",status=\"" + std::to_string(status) +
                                           "\"}") != std::string::npos;
  }

  static void expect_timeout_error(const json::value& body, const std::string& when) {
    const json::value& error = body.at("error");
    EXPECT_EQ(error.at("type"), "timeout");
    const std::string message(error.at("message").as_string());
    EXPECT_NE(message.find("deadline"), std::string::npos) << message;
    EXPECT_NE(message.find(when), std::string::npos) << message;
  }

  Metrics metrics_;
  std::unique_ptr<ServeStack> stack_;
};

TEST_F(DeadlineHandlers, BeforeTheFirstTokenIs504WholeOrStreamed) {
  auto blocker = occupy_the_slot();
  ASSERT_TRUE(blocker);
  // Both wait in the queue behind the blocker until their deadline passes.
  FakeResponseWriter whole = call(kChat, std::string(kLongChat) + "}", "0.05");
  EXPECT_EQ(whole.status, 504) << whole.body;
  EXPECT_EQ(whole.content_type, "application/json");
  expect_timeout_error(whole.json_body(), "before its first token");

  FakeResponseWriter streamed = call(kChat, std::string(kLongChat) + R"(,"stream":true})", "0.05");
  EXPECT_FALSE(streamed.streamed) << "nothing was sent yet: a plain error response";
  EXPECT_EQ(streamed.status, 504) << streamed.body;
  expect_timeout_error(streamed.json_body(), "before its first token");

  FakeResponseWriter completion =
      call(kCompletions, R"({"prompt":"once","max_tokens":4000,"ignore_eos":true})", "0.05");
  EXPECT_EQ(completion.status, 504) << completion.body;
  EXPECT_TRUE(counted(kChat, 504));
  EXPECT_TRUE(counted(kCompletions, 504));
  blocker->cancel();
}

TEST_F(DeadlineHandlers, MidAnswerAWholeAnswerIs504NeverA200) {
  FakeResponseWriter chat = call(kChat, std::string(kLongChat) + "}", "0.5");
  EXPECT_EQ(chat.status, 504) << chat.body;
  expect_timeout_error(chat.json_body(), "generated tokens; the answer is incomplete");
  FakeResponseWriter completion = call(kCompletions, R"({"prompt":"once","max_tokens":4000,"ignore_eos":true})", "0.5");
  EXPECT_EQ(completion.status, 504) << completion.body;
  expect_timeout_error(completion.json_body(), "the answer is incomplete");
  EXPECT_FALSE(counted(kChat, 200));
}

TEST_F(DeadlineHandlers, MidAnswerAStreamEndsWithAnErrorEventThenDone) {
  FakeResponseWriter w =
      call(kChat, std::string(kLongChat) + R"(,"stream":true,"stream_options":{"include_usage":true}})", "0.5");
  ASSERT_TRUE(w.streamed) << w.body;
  EXPECT_EQ(w.status, 200);
  EXPECT_TRUE(w.ended);
  const std::vector<std::string> events = w.events();
  ASSERT_GE(events.size(), 4u);  // the role chunk, some text, the error, [DONE]
  EXPECT_EQ(events.back(), "[DONE]");
  expect_timeout_error(json::parse(events[events.size() - 2]), "the answer is incomplete");
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const json::value chunk = json::parse(events[i]);
    EXPECT_TRUE(chunk.at("choices").at(0).at("finish_reason").is_null()) << events[i];  // no clean final chunk
  }
  EXPECT_TRUE(counted(kChat, 504));
  EXPECT_FALSE(counted(kChat, 200));
}

TEST_F(DeadlineHandlers, TheHeaderShortensTheServerTimeoutAndFreesTheSlot) {
  // --timeout 600: only the header can end this request within the test.
  FakeResponseWriter timed_out = call(kChat, std::string(kLongChat) + "}", "0.5");
  ASSERT_EQ(timed_out.status, 504) << timed_out.body;
  EXPECT_NE(timed_out.body.find("(0.5 s)"), std::string::npos) << timed_out.body;
  // The only slot is free: the next request is answered (behind the old job it would wait for
  // over a minute and meet its own 30 s deadline instead).
  FakeResponseWriter next = call(kChat, R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3})", "30");
  EXPECT_EQ(next.status, 200) << next.body;
  for (int i = 0; i < 1000 && stack_->scheduler->busy_slots() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(stack_->scheduler->busy_slots(), 0);
}

TEST_F(DeadlineHandlers, ABadHeaderIs400NamingIt) {
  for (const std::string value : {"soon", "0", "-1", "86401", "1e9", "nan", "inf", "1s", " "}) {
    for (const char* path : {kChat, kCompletions}) {
      FakeResponseWriter w =
          call(path, R"({"messages":[{"role":"user","content":"hi"}],"prompt":"hi","max_tokens":1})", value);
      EXPECT_EQ(w.status, 400) << value << ": " << w.body;
      const std::string message(w.json_body().at("error").at("message").as_string());
      EXPECT_NE(message.find("X-Request-Timeout"), std::string::npos) << message;
      EXPECT_EQ(w.json_body().at("error").at("type"), "invalid_request_error");
    }
  }
  EXPECT_TRUE(counted(kChat, 400));
  // A good value is accepted.
  FakeResponseWriter ok = call(kChat, R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})", "2.5");
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(DeadlineHandlers, TheServerTimeoutAloneIs504Too) {
  build(0.5);
  FakeResponseWriter w = call(kChat, std::string(kLongChat) + "}");
  EXPECT_EQ(w.status, 504) << w.body;
  expect_timeout_error(w.json_body(), "the answer is incomplete");
}

}  // namespace
}  // namespace cellserve::server
