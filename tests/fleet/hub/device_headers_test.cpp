// What of a device's response reaches the user: only allow-listed headers with sane values, one
// signature, and an API content type; through the RelayWriter every relayed answer passes.
#include "fleet/hub/device_headers.h"

#include <gtest/gtest.h>

#include "fleet/hub/relay_writer.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

TEST(DeviceHeaders, OnlyTheAllowListReachesTheUser) {
  const net::HeaderList from_device = {
      {"Set-Cookie", "session=stolen; Path=/"},
      {"Strict-Transport-Security", "max-age=63072000; includeSubDomains"},
      {"Access-Control-Allow-Origin", "*"},
      {"Access-Control-Allow-Credentials", "true"},
      {"Location", "https://evil.example/"},
      {"X-Cellserve-Replica", "7"},
      {"WWW-Authenticate", "Basic realm=x"},
      {"Retry-After", "5"},
      {"Cache-Control", "no-cache"},
      {"Allow", "GET, HEAD"},
      {"X-Cellserve-Signature", "{\"v\":1}"},
      {"x-cellserve-signature", "{\"v\":1,\"second\":true}"},
  };
  const net::HeaderList expected = {{"retry-after", "5"},
                                    {"cache-control", "no-cache"},
                                    {"allow", "GET, HEAD"},
                                    {"x-cellserve-signature", "{\"v\":1}"}};
  EXPECT_EQ(headers_for_user(from_device), expected);
}

TEST(DeviceHeaders, ValuesAreChecked) {
  EXPECT_TRUE(headers_for_user({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}).empty());
  EXPECT_TRUE(headers_for_user({{"retry-after", "99999999"}}).empty());
  EXPECT_TRUE(headers_for_user({{"cache-control", "public, max-age=31536000"}}).empty());
  EXPECT_TRUE(headers_for_user({{"allow", "GET\r\nSet-Cookie: a=b"}}).empty());
  EXPECT_TRUE(headers_for_user({{"x-cellserve-signature", std::string(9000, 'a')}}).empty());
  EXPECT_TRUE(headers_for_user({{"x-cellserve-signature", "{\"v\":1}\x01"}}).empty());
}

TEST(DeviceHeaders, OnlyApiContentTypes) {
  EXPECT_EQ(content_type_for_user("application/json"), "application/json");
  EXPECT_EQ(content_type_for_user("application/json; charset=utf-8"), "application/json; charset=utf-8");
  EXPECT_EQ(content_type_for_user("text/event-stream"), "text/event-stream");
  EXPECT_EQ(content_type_for_user("text/plain; version=0.0.4"), "text/plain; version=0.0.4");
  EXPECT_EQ(content_type_for_user("text/html"), "application/octet-stream");
  EXPECT_EQ(content_type_for_user("application/jsonx"), "application/octet-stream");
  EXPECT_EQ(content_type_for_user("image/svg+xml"), "application/octet-stream");
  EXPECT_EQ(content_type_for_user(""), "application/octet-stream");
}

TEST(RelayWriter, FiltersWholeAnswersAndStreams) {
  cellserve::testing::FakeResponseWriter whole;
  RelayWriter relay(whole);
  relay.send(200, "text/html", "<script>", {{"set-cookie", "a=b"}, {"retry-after", "1"}});
  EXPECT_EQ(whole.content_type, "application/octet-stream");
  EXPECT_EQ(whole.headers, (net::HeaderList{{"retry-after", "1"}}));
  cellserve::testing::FakeResponseWriter streamed;
  RelayWriter stream(streamed);
  ASSERT_TRUE(stream.begin_stream(200, "text/event-stream", {{"set-cookie", "a=b"}}));
  EXPECT_EQ(streamed.content_type, "text/event-stream");
  EXPECT_TRUE(streamed.headers.empty());
}

}  // namespace
}  // namespace cellserve::fleet
