// The stored form of a deployment spec (deployment_spec_document): every field round-trips, old
// documents read with today's defaults, and anything else is DataLoss naming the key.
#include <gtest/gtest.h>

#include "fleet/spec/deployment_spec.h"
#include "tests/fleet/every_field_spec.h"

namespace cellserve::fleet {
namespace {

using test_specs::every_field_spec;

TEST(DeploymentSpecDocument, EveryFieldRoundTrips) {
  const DeploymentSpec spec = every_field_spec();
  test_specs::expect_every_field_set(spec);
  auto back = read_deployment_spec_document(deployment_spec_document(spec));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, spec) << deployment_spec_document(spec);
  EXPECT_EQ(deployment_spec_document(*back), deployment_spec_document(spec));
}

// Boost.JSON 1.81 reads about one double in ten one unit in the last place away from the
// shortest text that names it; the document's doubles must not move.
TEST(DeploymentSpecDocument, DoublesRoundTripBitForBit) {
  DeploymentSpec spec = every_field_spec();
  for (const double d : {183.24945331891402, 231040.84863262498, 0.30000000000000004, 5e-324, 1.7976931348623157e308}) {
    spec.max_price_per_day = d;
    spec.requirements.min_decode_tps = d;
    spec.requirements.max_temperature_c = -d;
    auto back = read_deployment_spec_document(deployment_spec_document(spec));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, spec) << deployment_spec_document(spec);
  }
}

TEST(DeploymentSpecDocument, DefaultsRoundTrip) {
  const DeploymentSpec spec;
  auto back = read_deployment_spec_document(deployment_spec_document(spec));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, spec);
}

TEST(DeploymentSpecDocument, AbsentKeysReadAsTheStructDefaults) {
  // A document stored before a field existed lacks its key.
  auto back = read_deployment_spec_document(R"({"name":"old","gateway":{"alias":"a"},"engine":{}})");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  DeploymentSpec want;
  want.name = "old";
  want.gateway.alias = "a";
  EXPECT_EQ(*back, want);
  EXPECT_EQ(back->gateway.queue_max, 64);
  EXPECT_EQ(back->gateway.batch_reserve_slots, 1);
}

TEST(DeploymentSpecDocument, AnythingElseIsDataLossNamingTheKey) {
  const struct {
    const char* text;
    const char* names;
  } cases[] = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"name":"x","color":"red"})", "color is not a known key"},
      {R"({"engine":{"ctx_size":1,"kv":"f16"}})", "engine.kv is not a known key"},
      {R"({"replicas":"3"})", "replicas has the wrong type"},
      {R"({"replicas":1.5})", "replicas has the wrong type"},
      {R"({"replicas":4294967296})", "replicas has the wrong type"},
      {R"({"requirements":{"min_ram_bytes":-1}})", "requirements.min_ram_bytes has the wrong type"},
      {R"({"requirements":{"attested_only":1}})", "requirements.attested_only has the wrong type"},
      {R"({"requirements":{"allow":["a",2]}})", "requirements.allow has the wrong type"},
      {R"({"gateway":[]})", "gateway is not an object"},
      {R"({"env":[["A"]]})", "env has the wrong type"},
      {R"({"max_price_per_day":1})", "max_price_per_day has the wrong type"},
      {R"({"max_price_per_day":"1.5x"})", "max_price_per_day has the wrong type"},
      {R"({"max_price_per_day":"inf"})", "max_price_per_day has the wrong type"},
  };
  for (const auto& c : cases) {
    auto back = read_deployment_spec_document(c.text);
    ASSERT_FALSE(back.ok()) << c.text;
    EXPECT_EQ(back.status().code(), StatusCode::DataLoss) << c.text;
    EXPECT_NE(back.status().message().find(c.names), std::string::npos) << c.text << ": " << back.status().message();
  }
}

TEST(DeploymentSpecDocument, ServingRoundTrips) {
  const Serving serving = serving_of(every_field_spec());
  auto back = read_serving_document(serving_document(serving));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, serving);
  EXPECT_NE(*back, Serving{});
  auto bad = read_serving_document(R"({"model_url":"u","replicas":1})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::DataLoss);
  EXPECT_NE(bad.status().message().find("replicas is not a known key"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace cellserve::fleet
