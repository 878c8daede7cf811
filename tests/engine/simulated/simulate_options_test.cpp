// `--simulate prefill=N,decode=N,slots=N`: strict parsing, each error naming the key.
#include "engine/simulated/simulate_options.h"

#include <gtest/gtest.h>

namespace cellserve::engine::simulated {
namespace {

TEST(SimulateOptions, ReadsAllThreeKeys) {
  auto o = parse_simulate_options("prefill=400,decode=20.5,slots=4");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->prefill_tps, 400);
  EXPECT_EQ(o->decode_tps, 20.5);
  EXPECT_EQ(o->slots, 4);
}

TEST(SimulateOptions, MissingKeysKeepTheirDefaults) {
  auto o = parse_simulate_options("slots=2");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->slots, 2);
  EXPECT_EQ(o->prefill_tps, SimulateOptions{}.prefill_tps);
  EXPECT_EQ(o->decode_tps, SimulateOptions{}.decode_tps);
}

TEST(SimulateOptions, TextRoundTrips) {
  const SimulateOptions o{1234.5, 17, 8};
  auto back = parse_simulate_options(simulate_options_text(o));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->prefill_tps, o.prefill_tps);
  EXPECT_EQ(back->decode_tps, o.decode_tps);
  EXPECT_EQ(back->slots, o.slots);
  EXPECT_EQ(back->claim, 1);
  EXPECT_EQ(simulate_options_text(o).find("claim"), std::string::npos) << "an honest device's text is unchanged";
}

TEST(SimulateOptions, AClaimMultipliesOnlyTheReportedSpeeds) {
  auto o = parse_simulate_options("prefill=400,decode=25,claim=100");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->decode_tps, 25) << "it still runs at its own speed";
  EXPECT_EQ(o->claimed_decode_tps(), 2500);
  EXPECT_EQ(o->claimed_prefill_tps(), 40000);
  auto back = parse_simulate_options(simulate_options_text(*o));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->claim, 100);
}

TEST(SimulateOptions, CannedRoundTrips) {
  SimulateOptions o{1234.5, 17, 8};
  for (const bool canned : {false, true}) {
    o.canned = canned;
    auto back = parse_simulate_options(simulate_options_text(o));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(back->prefill_tps, o.prefill_tps);
    EXPECT_EQ(back->decode_tps, o.decode_tps);
    EXPECT_EQ(back->slots, o.slots);
    EXPECT_EQ(back->canned, canned);
  }
  EXPECT_EQ(simulate_options_text(SimulateOptions{}).find("canned"), std::string::npos);  // off: not shown
}

TEST(SimulateOptions, AFailureStatusRoundTrips) {
  for (const int status : {429, 500, 503, 599}) {
    auto o = parse_simulate_options("slots=2,fail=" + std::to_string(status));
    ASSERT_TRUE(o.ok()) << o.status().to_string();
    EXPECT_EQ(o->fail_status, status);
    auto back = parse_simulate_options(simulate_options_text(*o));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(back->fail_status, status);
  }
  EXPECT_EQ(simulate_options_text(SimulateOptions{}).find("fail"), std::string::npos);  // off: not shown
}

struct BadCase {
  const char* text;
  const char* names;  // what the message must contain
};

class SimulateOptionsRefuses : public ::testing::TestWithParam<BadCase> {};

TEST_P(SimulateOptionsRefuses, WithAMessageNamingTheProblem) {
  auto o = parse_simulate_options(GetParam().text);
  ASSERT_FALSE(o.ok()) << GetParam().text;
  EXPECT_EQ(o.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(o.status().message().find(GetParam().names), std::string::npos) << o.status().message();
  EXPECT_EQ(o.status().message().find('\n'), std::string::npos) << "one line";
}

INSTANTIATE_TEST_SUITE_P(BadText, SimulateOptionsRefuses,
                         ::testing::Values(BadCase{"", "--simulate"}, BadCase{"speed=3", "speed"},
                                           BadCase{"prefill", "key=value"}, BadCase{"prefill=400,", "trailing"},
                                           BadCase{"slots=4,slots=5", "twice"}, BadCase{"slots=0", "slots"},
                                           BadCase{"slots=33", "slots"}, BadCase{"slots=2.5", "integer"},
                                           BadCase{"prefill=-1", "prefill"}, BadCase{"prefill=1e9", "prefill"},
                                           BadCase{"decode=0", "decode"}, BadCase{"decode=abc", "not a number"},
                                           BadCase{"decode=nan", "decode"}, BadCase{"decode=inf", "decode"},
                                           BadCase{"decode=20x", "not a number"}, BadCase{"=4", "unknown"},
                                           BadCase{"claim=0.5", "claim"}, BadCase{"claim=1e9", "claim"},
                                           BadCase{"canned=yes", "canned: must be 0 or 1"}, BadCase{"fail=404", "fail"},
                                           BadCase{"fail=450", "fail: must be 429"},
                                           BadCase{"fail=500.5", "fail: must be 429"}, BadCase{"fail=600", "fail"}));

}  // namespace
}  // namespace cellserve::engine::simulated
