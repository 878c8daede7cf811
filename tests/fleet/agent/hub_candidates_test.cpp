// The agent's list of hubs (--hub URL1,URL2,...), its expansion of a name with several addresses,
// the dial order, and the wait between dials.
#include "fleet/agent/hub_candidates.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace cellserve::fleet {
namespace {

using std::chrono::milliseconds;

TEST(HubList, ParsesEachEntryWithItsOrigin) {
  auto hubs = parse_hub_list("http://a.example:8080, https://b.example ,http://127.0.0.1:9000/");
  ASSERT_TRUE(hubs.ok()) << hubs.status().message();
  ASSERT_EQ(hubs->size(), 3u);
  EXPECT_EQ((*hubs)[0].origin, "http://a.example:8080");
  EXPECT_EQ((*hubs)[0].address.host, "a.example");
  EXPECT_EQ((*hubs)[1].origin, "https://b.example:443");
  EXPECT_TRUE((*hubs)[1].address.tls);
  EXPECT_EQ((*hubs)[2].origin, "http://127.0.0.1:9000");
  EXPECT_EQ((*hubs)[2].address.port, 9000);
}

TEST(HubList, DropsRepeats) {
  auto hubs = parse_hub_list("http://a:1,http://a:1/,http://b:2");
  ASSERT_TRUE(hubs.ok());
  EXPECT_EQ(hubs->size(), 2u);
}

TEST(HubList, NamesTheBadEntry) {
  auto bad = parse_hub_list("http://a:1,ftp://b:2,http://c:3");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(bad.status().message().find("ftp://b:2"), std::string::npos) << bad.status().message();
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);

  auto port = parse_hub_list("http://a:1,http://c:99999");
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("http://c:99999"), std::string::npos) << port.status().message();

  EXPECT_FALSE(parse_hub_list("http://a:1,,http://b:2").ok());
  EXPECT_FALSE(parse_hub_list("").ok());
  EXPECT_FALSE(parse_hub_list(" , ").ok());
}

// A table standing in for DNS.
HubResolver table(std::map<std::string, std::vector<std::string>> names) {
  return [names = std::move(names)](const std::string& host, int) -> Result<std::vector<std::string>> {
    const auto it = names.find(host);
    if (it == names.end()) return Status::unavailable(host + " does not resolve");
    return it->second;
  };
}

TEST(HubList, ANameWithSeveralAddressesIsSeveralCandidates) {
  auto hubs = parse_hub_list(
      "http://hubs.example:7000,http://one.example:7000,http://gone.example:1,"
      "http://10.0.0.9:7000,https://tls.example:443");
  ASSERT_TRUE(hubs.ok());
  const auto resolve = table({{"hubs.example", {"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
                              {"one.example", {"10.0.1.1"}},
                              {"tls.example", {"10.0.2.1", "10.0.2.2"}}});
  const std::vector<HubCandidate> expanded = expand_addresses(*hubs, resolve);
  ASSERT_EQ(expanded.size(), 7u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(expanded[i].origin, "http://hubs.example:7000");  // the signature still names the name
    EXPECT_EQ(expanded[i].address.host, "hubs.example");
    EXPECT_EQ(expanded[i].address.connect_host, "10.0.0." + std::to_string(i + 1));
  }
  EXPECT_EQ(expanded[3].address.connect_host, "");         // one address: dialled by name
  EXPECT_EQ(expanded[4].origin, "http://gone.example:1");  // kept: the dial says why it fails
  EXPECT_EQ(expanded[5].address.connect_host, "");         // an IP literal is not looked up
  EXPECT_EQ(expanded[6].address.connect_host, "");         // https: verified by name
}

TEST(HubRotation, StartsAnywhereAndVisitsEveryCandidateEachRound) {
  auto hubs = parse_hub_list("http://a:1,http://b:2,http://c:3,http://d:4");
  ASSERT_TRUE(hubs.ok());
  std::set<std::string> starts;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    HubRotation rotation(*hubs, {}, seed);
    std::vector<std::string> round;
    for (int i = 0; i < 4; ++i) round.push_back(rotation.next().origin);
    starts.insert(round.front());
    EXPECT_EQ(std::set<std::string>(round.begin(), round.end()).size(), 4u);
    // In order after the start: a dead hub is followed by the next one, not a random pick.
    const size_t first = static_cast<size_t>(round.front()[7] - 'a');
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(round[i][7], static_cast<char>('a' + (first + i) % 4));
  }
  EXPECT_GT(starts.size(), 1u);  // agents spread over the hubs
}

TEST(HubRotation, ResolvesAfreshEachRound) {
  auto hubs = parse_hub_list("http://hubs.example:7000");
  ASSERT_TRUE(hubs.ok());
  auto answer = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"10.0.0.1", "10.0.0.2"});
  HubRotation rotation(
      *hubs, [answer](const std::string&, int) -> Result<std::vector<std::string>> { return *answer; }, 7);
  std::set<std::string> seen;
  for (int i = 0; i < 2; ++i) seen.insert(rotation.next().address.connect_host);
  EXPECT_EQ(seen, (std::set<std::string>{"10.0.0.1", "10.0.0.2"}));
  *answer = {"10.0.0.7", "10.0.0.8", "10.0.0.9"};
  seen.clear();
  for (int i = 0; i < 3; ++i) seen.insert(rotation.next().address.connect_host);
  EXPECT_EQ(seen, (std::set<std::string>{"10.0.0.7", "10.0.0.8", "10.0.0.9"}));
}

TEST(DialBackoff, DoublesFromAFifthOfASecondToFiveSeconds) {
  DialBackoff backoff;
  std::vector<int64_t> whole;
  for (int i = 0; i < 7; ++i) whole.push_back(backoff.next(1.0).count());
  EXPECT_EQ(whole, (std::vector<int64_t>{200, 400, 800, 1600, 3200, 5000, 5000}));
  DialBackoff low;
  EXPECT_EQ(low.next(0.0), milliseconds(100));  // jitter: half the step at least
  EXPECT_EQ(low.next(0.5), milliseconds(300));
  EXPECT_EQ(low.next(7.0), milliseconds(800));  // out of range: clamped
}

TEST(DialBackoff, ATunnelThatLivedResetsIt) {
  DialBackoff backoff;
  for (int i = 0; i < 6; ++i) backoff.next(1.0);
  backoff.tunnel_closed(milliseconds(300));  // died young: keep slowing down
  EXPECT_EQ(backoff.next(1.0), milliseconds(5000));
  backoff.tunnel_closed(DialBackoff::kLived);
  EXPECT_EQ(backoff.next(1.0), milliseconds(200));
}

}  // namespace
}  // namespace cellserve::fleet
