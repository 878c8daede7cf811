// The store suite, once per engine: a spec with every field set survives the store.

#include <gtest/gtest.h>

#include "fleet/store/store.h"
#include "tests/fleet/every_field_spec.h"
#include "tests/fleet/store/store_fixture.h"
#include "tests/fleet/store/store_records.h"

namespace cellserve::fleet {
namespace {

// A spec with every field set (tests/fleet/every_field_spec.h) reads back equal from the store,
// as the deployment and as its rows' serving, across a restart; scaling and spec updates keep it.
TEST_P(StoreTest, EverySpecFieldRoundTripsThroughTheStore) {
  Deployment d;
  d.spec = test_specs::every_field_spec();
  test_specs::expect_every_field_set(d.spec);
  d.created_ms = kT0;
  d.secrets_version = 4;
  {
    auto store = reopen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create_deployment(d).ok());
  }
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  auto got = store->deployment(d.spec.name);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().to_string();
  EXPECT_EQ((*got)->spec, d.spec);
  EXPECT_EQ((*got)->created_ms, kT0);
  EXPECT_EQ((*got)->secrets_version, 4);
  const auto rows = replicas_of(*store, d.spec.name);
  ASSERT_EQ(rows.size(), 5u);
  for (const Replica& r : rows) EXPECT_EQ(r.serving, serving_of(d.spec));

  ASSERT_TRUE(store->scale_deployment(d.spec.name, 4, 1, kT0 + 1).ok());
  DeploymentSpec want = d.spec;
  want.replicas = 4;
  want.spares = 1;
  EXPECT_EQ((*store->deployment(d.spec.name))->spec, want);

  // An update replaces every field but the counts (scale_deployment's).
  DeploymentSpec next = want;
  next.replicas = 9;
  next.engine.ctx_size = 4096;
  next.gateway.first_byte_timeout_ms = 0;
  next.requirements.allow.clear();
  ASSERT_TRUE(store->update_deployment_spec(next).ok());
  next.replicas = 4;
  EXPECT_EQ((*store->deployment(d.spec.name))->spec, next);
  EXPECT_EQ((*store->deployment(d.spec.name))->secrets_version, 4) << "the env did not change";
  EXPECT_EQ(replica_at(*store, d.spec.name, 0).serving, serving_of(d.spec)) << "rows keep their serving";
}

}  // namespace
}  // namespace cellserve::fleet
