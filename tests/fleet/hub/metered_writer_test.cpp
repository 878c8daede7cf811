// The writer in front of the user at the deployment endpoint reads a streamed answer's usage
// wherever the writes split its events: several in one write, or one across writes.
#include "fleet/hub/metered_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cellserve::fleet {
namespace {

// Keeps what reaches the user.
class Sink final : public net::ResponseWriter {
 public:
  void send(int, std::string_view, std::string body, const net::HeaderList&) override { text += body; }
  bool begin_stream(int, std::string_view, const net::HeaderList&) override { return true; }
  bool write(std::string_view data) override {
    text += data;
    return true;
  }
  void end_stream() override {}
  bool client_gone() override { return false; }
  std::string text;
};

const std::string kStream =
    "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}],\"usage\":null}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n"
    ": cellserve-signature {}\n\n"
    "data: [DONE]\n\n";

TEST(MeteredWriter, ReadsTheUsageHoweverTheStreamIsSplit) {
  for (const size_t piece : {kStream.size(), size_t{1}, size_t{7}, size_t{64}}) {
    Sink sink;
    MeteredWriter w(sink);
    ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {{"X-Cellserve-Replica", "1"}}));
    for (size_t at = 0; at < kStream.size(); at += piece) ASSERT_TRUE(w.write(kStream.substr(at, piece)));
    w.end_stream();
    EXPECT_EQ(sink.text, kStream) << piece;
    EXPECT_EQ(w.status(), 200);
    EXPECT_EQ(w.replica(), 1);
    EXPECT_EQ(w.completion_tokens(), 2) << "writes of " << piece << " bytes";
    EXPECT_EQ(w.tokens_used(100), 7);
    EXPECT_TRUE(w.first_byte().has_value());
  }
}

TEST(MeteredWriter, WithoutUsageAStreamCountsItsDataEvents) {
  Sink sink;
  MeteredWriter w(sink);
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  ASSERT_TRUE(w.write("data: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: {\"n\""));
  ASSERT_TRUE(w.write(":3}\n\ndata: [DONE]\n\n"));
  EXPECT_EQ(w.completion_tokens(), 0);
  EXPECT_EQ(w.tokens_used(40), 10 + 3);  // a token per 4 request bytes, one per data event
}

TEST(MeteredWriter, AnEndlessLineIsSkippedNotKept) {
  Sink sink;
  MeteredWriter w(sink);
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  const std::string chunk(64 << 10, 'x');
  ASSERT_TRUE(w.write("data: {\"usage\":{\"completion_tokens\":9,"));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(w.write(chunk));  // 1.25 MiB without a newline
  ASSERT_TRUE(w.write("}}\n\ndata: {\"usage\":{\"completion_tokens\":3}}\n\n"));
  EXPECT_EQ(w.completion_tokens(), 3);  // the oversized event is not parsed; the next one is
}

}  // namespace
}  // namespace cellserve::fleet
