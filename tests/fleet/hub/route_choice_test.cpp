// Routing by live load, without a fleet: the replica with the lowest estimated completion time
// wins, a long case goes to the fast device, spares only take what replicas cannot, and a
// shared prompt prefix sticks to one replica unless it is clearly busier.
#include "fleet/hub/route_choice.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "fleet/hub/gateway_request.h"

namespace cellserve::fleet {
namespace {

ReplicaView replica(int index, double prefill, double decode, int slots = 2, int busy = 0, bool spare = false) {
  ReplicaView r;
  r.deployment = "risk";
  r.index = index;
  r.processor_id = "p" + std::to_string(index);
  r.state = ReplicaState::Ready;
  r.prefill_tps = prefill;
  r.decode_tps = decode;
  r.slots = slots;
  r.busy = busy;
  r.spare = spare;
  return r;
}

RequestWork work(double prompt_tokens, double max_tokens) {
  RequestWork w;
  w.prompt_tokens = prompt_tokens;
  w.max_tokens = max_tokens;
  return w;
}

TEST(RouteChoice, ALongCaseGoesToTheFastDeviceEvenWhenItIsPartlyBusy) {
  // A phone at 50 tok/s prefill idles; a box at 200 tok/s has one of its two slots busy.
  const std::vector<ReplicaView> fleet = {replica(0, 50, 10, 2, 0), replica(1, 200, 20, 2, 1)};
  const RequestWork case7000 = work(7000, 8);
  EXPECT_EQ(choose_replica(fleet, case7000), 1u);
  EXPECT_NEAR(estimated_seconds(fleet[0], case7000), 7000 / 50.0 + 8 / 10.0, 1e-9);
  EXPECT_NEAR(estimated_seconds(fleet[1], case7000), (7000 / 200.0 + 8 / 20.0) * 1.5, 1e-9);
}

// Two equal devices, each with one of its four slots busy; one of them is still reading a
// 7,000-token prompt. A short request goes to the other: that device is not as idle as its free
// slots say.
TEST(RouteChoice, AShortRequestAvoidsADeviceInTheMiddleOfALongPrefill) {
  std::vector<ReplicaView> fleet = {replica(0, 500, 20, 4, 1), replica(1, 500, 20, 4, 1)};
  fleet[0].prefill = {1000, 7000};
  const RequestWork shortq = work(50, 8);
  EXPECT_EQ(choose_replica(fleet, shortq), 1u);
  EXPECT_NEAR(estimated_seconds(fleet[0], shortq) - estimated_seconds(fleet[1], shortq), 6000 / 500.0, 1e-9);
  fleet[0].prefill = {7000, 7000};  // read: nothing left ahead of the request
  EXPECT_EQ(choose_replica(fleet, shortq), 0u);
}

TEST(RouteChoice, EqualDevicesShareTheLoad) {
  std::vector<ReplicaView> fleet = {replica(0, 100, 10), replica(1, 100, 10), replica(2, 100, 10)};
  std::map<size_t, int> sent;
  for (int i = 0; i < 6; ++i) {
    const auto pick = choose_replica(fleet, work(100, 16));
    ASSERT_TRUE(pick);
    ++sent[*pick];
    ++fleet[*pick].busy;  // what begin_request does
  }
  EXPECT_EQ(sent, (std::map<size_t, int>{{0, 2}, {1, 2}, {2, 2}}));
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), std::nullopt) << "every slot is busy: the request waits";
}

TEST(RouteChoice, SparesTakeLoadOnlyWhenEveryReplicaIsSaturated) {
  std::vector<ReplicaView> fleet = {replica(0, 100, 10, 1, 0), replica(1, 1000, 100, 1, 0, /*spare=*/true)};
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), 0u) << "the much faster spare waits while a replica is free";
  fleet[0].busy = 1;
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), 1u);
  fleet[1].busy = 1;
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), std::nullopt);
}

TEST(RouteChoice, UnmeasuredDevicesCountAsEqual) {
  const std::vector<ReplicaView> fleet = {replica(0, 0, 0, 2, 1), replica(1, 0, 0, 2, 0)};
  EXPECT_EQ(choose_replica(fleet, work(1000, 64)), 1u);
}

TEST(RouteChoice, ASharedPrefixSticksToOneReplicaUnlessItIsClearlyBusier) {
  std::vector<ReplicaView> fleet = {replica(0, 100, 10, 4), replica(1, 100, 10, 4), replica(2, 100, 10, 4)};
  RequestWork w = work(2000, 8);
  w.prefix_hash = fnv1a("system: you are a fraud analyst; case header ...");
  const auto home = choose_replica(fleet, w);
  ASSERT_TRUE(home);
  // Moderately busier than the others (1 of 4 slots: 1.25x the idle estimate): still its home.
  fleet[*home].busy = 1;
  EXPECT_EQ(choose_replica(fleet, w), home);
  // Clearly busier (3 of 4: 1.75x): the request goes to the best other replica.
  fleet[*home].busy = 3;
  const auto elsewhere = choose_replica(fleet, w);
  ASSERT_TRUE(elsewhere);
  EXPECT_NE(*elsewhere, *home);
  // Different prefixes spread over the replicas (rendezvous hashing), not all to one.
  fleet[*home].busy = 0;
  std::map<size_t, int> homes;
  for (int i = 0; i < 60; ++i) {
    RequestWork other = work(2000, 8);
    other.prefix_hash = fnv1a("case header " + std::to_string(i));
    ++homes[*choose_replica(fleet, other)];
  }
  EXPECT_EQ(homes.size(), 3u);
  for (const auto& [index, n] : homes) EXPECT_GE(n, 8) << "replica " << index;
}

constexpr std::string_view kChat = "/chat/completions";
constexpr std::string_view kResponses = "/responses";

TEST(GatewayRequest, ReadsModelSizeAndPrefix) {
  const std::string system(1500, 's');
  auto g = read_gateway_request(R"({"model":"risk","max_tokens":7,"messages":[{"role":"system","content":")" + system +
                                    R"("},{"role":"user","content":[{"type":"text","text":"case 1"}]}]})",
                                kChat);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->model, "risk");
  EXPECT_EQ(g->work.max_tokens, 7);
  EXPECT_NEAR(g->work.prompt_tokens, (6 + 1 + 1500 + 1 + 4 + 1 + 6 + 1) / kBytesPerToken, 1e-9);
  ASSERT_TRUE(g->work.prefix_hash);
  // Two cases behind the same system prompt share the prefix; a short prompt has none.
  auto other = read_gateway_request(
      R"({"messages":[{"role":"system","content":")" + system + R"("},{"role":"user","content":"case 2"}]})", kChat);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->work.prefix_hash, g->work.prefix_hash);
  EXPECT_EQ(other->work.max_tokens, kDefaultMaxTokens);
  auto small = read_gateway_request(R"({"prompt":"Hello","max_completion_tokens":3})", "/completions");
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->work.prefix_hash);
  EXPECT_EQ(small->work.max_tokens, 3);
  EXPECT_TRUE(small->model.empty());
}

TEST(GatewayRequest, ReadsAResponsesRequestAsTheChatItMapsTo) {
  const std::string system(1500, 's');
  auto chat = read_gateway_request(R"({"max_tokens":5,"messages":[{"role":"system","content":")" + system +
                                       R"("},{"role":"user","content":"case 1"}]})",
                                   kChat);
  auto responses =
      read_gateway_request(R"({"max_output_tokens":5,"instructions":")" + system +
                               R"(","input":[{"role":"user","content":[{"type":"input_text","text":"case 1"}]}]})",
                           kResponses);
  ASSERT_TRUE(chat.ok() && responses.ok());
  EXPECT_EQ(responses->work.max_tokens, 5);
  EXPECT_DOUBLE_EQ(responses->work.prompt_tokens, chat->work.prompt_tokens);
  EXPECT_EQ(responses->work.prefix_hash, chat->work.prefix_hash);  // the same replica holds both
  auto text = read_gateway_request(R"({"input":"Hello","instructions":"Be brief."})", kResponses);
  ASSERT_TRUE(text.ok());
  EXPECT_NEAR(text->work.prompt_tokens, (7 + 9 + 1 + 5 + 5 + 1) / kBytesPerToken, 1e-9);
  // A tool result counts as input too.
  auto tool =
      read_gateway_request(R"({"input":[{"type":"function_call_output","call_id":"c","output":"sunny"}]})", kResponses);
  ASSERT_TRUE(tool.ok());
  EXPECT_NEAR(tool->work.prompt_tokens, (1 + 5 + 1) / kBytesPerToken, 1e-9);
}

TEST(GatewayRequest, NChoicesAskForNTimesTheTokens) {
  auto g = read_gateway_request(R"({"prompt":"x","max_tokens":10,"n":3})", "/completions");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->work.max_tokens, 30);
  auto absurd = read_gateway_request(R"({"prompt":"x","max_tokens":10,"n":1000000})", "/completions");
  ASSERT_TRUE(absurd.ok());
  EXPECT_EQ(absurd->work.max_tokens, 10 * kMaxChoices);  // bounded: the replica refuses the rest
}

TEST(GatewayRequest, RefusesWhatIsNotAJsonObjectOrHasWrongTypes) {
  for (const char* body : {"", "{", "[]", "\"x\"", R"({"model":5})", R"({"max_tokens":"many"})"}) {
    EXPECT_FALSE(read_gateway_request(body, kChat).ok()) << body;
  }
  EXPECT_EQ(with_model(R"({"model":"alias","x":1})", "risk"), R"({"model":"risk","x":1})");
}

// The limit as the replica reads it at the endpoint (server/api/token_limit.h): the newer name
// wins, n_predict only on /completion, max_output_tokens only on /responses; a field the replica
// ignores there is never a reason to refuse the body.
TEST(GatewayRequest, ReadsTheTokenLimitAsTheReplicaDoesAtItsEndpoint) {
  const std::string both = R"({"prompt":"x","max_tokens":9,"max_completion_tokens":4,"n_predict":7})";
  EXPECT_EQ(read_gateway_request(both, "/v1/completions")->work.max_tokens, 4);
  EXPECT_EQ(read_gateway_request(both, "/completion")->work.max_tokens, 7);
  const std::string ignored = R"({"prompt":"x","max_tokens":5,"n_predict":"x","max_output_tokens":[]})";
  ASSERT_TRUE(read_gateway_request(ignored, "/completions").ok());
  EXPECT_EQ(read_gateway_request(ignored, "/completions")->work.max_tokens, 5);
  const Status wrong = read_gateway_request(ignored, "/completion").status();
  EXPECT_EQ(wrong.param(), "n_predict") << wrong.to_string();
  EXPECT_EQ(
      read_gateway_request(R"({"input":"x","max_tokens":"x","max_output_tokens":3})", kResponses)->work.max_tokens, 3);
  EXPECT_EQ(read_gateway_request(R"({"input":"x","max_output_tokens":0})", kResponses).status().param(),
            "max_output_tokens");
  // An embeddings body generates nothing: its replica reads no limit, so neither does the hub.
  EXPECT_TRUE(read_gateway_request(R"({"input":"x","max_tokens":"x"})", "/v1/embeddings").ok());
}

TEST(AddressToReplica, TheUsersCredentialsNeverReachADevice) {
  net::HttpRequest req;
  req.headers = {{"authorization", "Bearer users-api-key"},
                 {"x-api-key", "users-api-key"},
                 {"cookie", "session=users"},
                 {"content-type", "application/json"}};
  address_to_replica(req, "replica-key");
  EXPECT_EQ(req.header("authorization"), "Bearer replica-key");
  EXPECT_EQ(req.header("x-api-key"), "");
  EXPECT_EQ(req.header("cookie"), "");
  EXPECT_EQ(req.header("content-type"), "application/json");
}

TEST(RouteChoice, ADeviceSlowsDownByItsThrottlingAndItsHeat) {
  DeviceState d;
  EXPECT_DOUBLE_EQ(device_slowdown(d), 1) << "a device that reports nothing runs at its measured speed";
  d.cpu_freq_ratio = 0.97;
  EXPECT_DOUBLE_EQ(device_slowdown(d), 1) << "a governor's rounding is not throttling";
  d.cpu_freq_ratio = 0.5;
  EXPECT_DOUBLE_EQ(device_slowdown(d), 2) << "clocks capped at half: twice as slow";
  d.battery_temp_c = 44.9;
  EXPECT_DOUBLE_EQ(device_slowdown(d), 2);
  d.max_thermal_c = kHotCelsius;
  EXPECT_DOUBLE_EQ(device_slowdown(d), 2 * kHotSlowdown) << "hot, on top of throttled";
  d.cpu_freq_ratio.reset();
  EXPECT_DOUBLE_EQ(device_slowdown(d), kHotSlowdown);
  d.cpu_freq_ratio = 0;  // a hostile or broken report cannot make the estimate infinite
  EXPECT_DOUBLE_EQ(device_slowdown(d), 20 * kHotSlowdown);
}

TEST(RouteChoice, AThrottledOrHotDeviceGetsLessWork) {
  // Two equal phones; the first is hot and throttled to 60%. Requests go to the cool one until
  // its load outweighs the hot one's slowdown.
  std::vector<ReplicaView> fleet = {replica(0, 100, 10, 4), replica(1, 100, 10, 4)};
  DeviceState hot;
  hot.cpu_freq_ratio = 0.6;
  hot.max_thermal_c = 48;
  fleet[0].slowdown = device_slowdown(hot);
  EXPECT_NEAR(estimated_seconds(fleet[0], work(1000, 10)), (1000 / 100.0 + 10 / 10.0) / 0.6 * kHotSlowdown, 1e-9);
  std::map<size_t, int> sent;
  for (int i = 0; i < 6; ++i) {
    const auto pick = choose_replica(fleet, work(1000, 10));
    ASSERT_TRUE(pick);
    ++sent[*pick];
    ++fleet[*pick].busy;
  }
  EXPECT_EQ(sent[1], 4) << "the cool device fills every slot first";
  EXPECT_EQ(sent[0], 2) << "the hot one only takes what the cool one cannot";
}

// Two clients keep a request each outstanding against two devices: an honest one writing 100
// tok/s, and one writing 25 tok/s that claims 100x that. Time is simulated: each request ends
// after its 10 tokens at the device's true speed, and the hub measures it as it would a stream.
// Returns the over-reporter's share of the answers.
double over_reporters_share(bool believe_claims) {
  ReplicaRegistry reg;
  Deployment d;
  d.spec.name = "risk";
  d.spec.replicas = 2;
  d.spec.engine.parallel = 2;
  const double true_decode[2] = {100, 25};
  std::vector<Replica> rows(2);
  for (int i = 0; i < 2; ++i) {
    rows[i].deployment = "risk";
    rows[i].index = i;
    rows[i].processor_id = "p" + std::to_string(i);
    rows[i].state = ReplicaState::Ready;
    rows[i].prefill_tps = 40 * true_decode[i] * (i == 1 ? 100 : 1);
    rows[i].decode_tps = true_decode[i] * (i == 1 ? 100 : 1);
  }
  reg.refresh({d}, rows);
  struct Running {
    int index;
    double ends;
    ReplicaRegistry::InFlight guard;
  };
  std::vector<Running> running;
  double now = 0;
  int served[2] = {0, 0};
  for (int answered = 0; answered < 200; ++answered) {
    while (running.size() < 2) {
      std::vector<ReplicaView> candidates = reg.replicas("risk");
      if (believe_claims) {
        for (ReplicaView& c : candidates) c.decode_tps = c.claimed.decode_tps, c.prefill_tps = c.claimed.prefill_tps;
      }
      const std::optional<size_t> pick = choose_replica(candidates, work(40, 10));
      EXPECT_TRUE(pick);
      if (!pick) return 1;
      const int index = candidates[*pick].index;
      running.push_back({index, now + 10 / true_decode[index], reg.begin_request("risk", index)});
    }
    auto first = std::min_element(running.begin(), running.end(),
                                  [](const Running& a, const Running& b) { return a.ends < b.ends; });
    const int index = first->index;
    const double took = first->ends - now;
    now = first->ends;
    running.erase(first);
    ++served[index];
    reg.record_speed("risk", index, "p" + std::to_string(index),
                     AnswerSample{40, 10, true, 1 / true_decode[index], took});
  }
  return static_cast<double>(served[1]) / (served[0] + served[1]);
}

TEST(RouteChoice, AnOverReporterGetsNoMoreThanItsMeasuredShare) {
  // Its measured capacity is 25 / (100 + 25) of the two (equal slots).
  const double measured_share = 25.0 / 125;
  const double share = over_reporters_share(false);
  EXPECT_LE(share, measured_share);
  // The same run routed on the claims: the liar takes nearly everything (what this test guards).
  EXPECT_GT(over_reporters_share(true), 0.9);
}

TEST(RouteChoice, NoReplicaHoldsMoreThanTwiceItsCapacityShareWhileAnotherHasRoom) {
  // Three equal replicas with many slots: replica 0 is the prefix's and already holds 2 of the 3
  // requests in flight (2x its third would be 2): the next goes elsewhere, even with affinity.
  std::vector<ReplicaView> fleet = {replica(0, 100, 10, 32, 2), replica(1, 100, 10, 32, 0), replica(2, 100, 10, 32, 0)};
  EXPECT_TRUE(over_share(fleet, 0, work(100, 16)));
  EXPECT_FALSE(over_share(fleet, 1, work(100, 16)));
  EXPECT_NE(choose_replica(fleet, work(100, 16)), 0u);
  // When no other replica has a free slot, the bound gives way: a slot is never left idle.
  fleet[1].busy = fleet[2].busy = 32;
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), 0u);
  // One request in flight never makes a replica over its share.
  std::vector<ReplicaView> two = {replica(0, 100, 10, 2, 0), replica(1, 1000, 100, 2, 0)};
  EXPECT_FALSE(over_share(two, 0, work(100, 16)));
}

TEST(RouteChoice, AnIdleUnmeasuredReplicaIsMeasuredBesideAMeasuredOne) {
  // Replica 0 is measured fast; replica 1 is new (the prior): at low load it would never be
  // chosen, and so never measured. It takes requests one at a time until measured.
  std::vector<ReplicaView> fleet = {replica(0, 1000, 100), replica(1, kPriorPrefillTps, kPriorDecodeTps)};
  for (int i = 0; i < kTrustedSamples; ++i) fleet[0].measured.add(AnswerSample{40, 11, true, 0.04, 0.14}, {});
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), 1u);
  fleet[1].busy = 1;
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), 0u) << "one at a time";
  fleet[1].busy = 0;
  for (int i = 0; i < kTrustedSamples; ++i) fleet[1].measured.add(AnswerSample{40, 11, true, 0.4, 1.4}, {});
  EXPECT_EQ(choose_replica(fleet, work(100, 16)), 0u) << "measured: ranked by its figures";
  // A request with a prefix measures only the prefix's own replica: affinity keeps its cache.
  // By the ranking alone replica 0 would take every prefix; the probe alone, replica 1.
  fleet[1].measured = SpeedMeter();
  RequestWork shared = work(100, 16);
  std::map<size_t, int> chosen;
  for (uint64_t h = 1; h <= 64; ++h) {
    shared.prefix_hash = h;
    ++chosen[*choose_replica(fleet, shared)];
  }
  EXPECT_GT(chosen[0], 0) << "prefixes of replica 0 stay there";
  EXPECT_GT(chosen[1], 0) << "prefixes of replica 1 measure it";
  // With none measured (a new deployment), the ranking alone decides.
  std::vector<ReplicaView> fresh = {replica(0, 1000, 100), replica(1, 100, 10)};
  EXPECT_EQ(choose_replica(fresh, work(100, 16)), 0u);
}

}  // namespace
}  // namespace cellserve::fleet
