// SQLite only: its file (garbage, an unopenable path, memory), and the migrations from its older
// schemas.

#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

#include "fleet/store/sqlite_db.h"
#include "fleet/store/sqlite_schema.h"
#include "fleet/store/store.h"
#include "tests/fleet/every_field_spec.h"
#include "tests/fleet/store/store_fixture.h"
#include "tests/fleet/store/store_records.h"

namespace cellserve::fleet {
namespace {

// A hub database written before simulated processors existed (schema 1) opens, and its rows read
// as not simulated.
TEST(SqliteStore, SchemaOneFileMigrates) {
  TempDb db;
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok()) << raw.status().to_string();
    // Schema 1 as fleet/store/sqlite_store.cpp's first migration wrote it, with one row each.
    constexpr const char* kSchemaOneWithRows = R"sql(
CREATE TABLE processors (
  id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, ram_bytes INTEGER NOT NULL,
  free_disk_bytes INTEGER NOT NULL, cores INTEGER NOT NULL, big_cores INTEGER NOT NULL, arch TEXT NOT NULL,
  os TEXT NOT NULL, cpu_features TEXT NOT NULL, prefill_tps REAL NOT NULL, decode_tps REAL NOT NULL,
  bench_shape TEXT NOT NULL, price_per_day REAL NOT NULL, attested INTEGER NOT NULL, online INTEGER NOT NULL,
  registered_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL);
CREATE TABLE deployments (
  name TEXT PRIMARY KEY NOT NULL, model_url TEXT NOT NULL, model_sha256 TEXT NOT NULL,
  min_ram_bytes INTEGER NOT NULL, min_cores INTEGER NOT NULL, req_arch TEXT NOT NULL, min_decode_tps REAL NOT NULL,
  attested_only INTEGER NOT NULL, allow_list TEXT NOT NULL, replicas INTEGER NOT NULL, spares INTEGER NOT NULL,
  max_price_per_day REAL NOT NULL, ctx_size INTEGER NOT NULL, parallel INTEGER NOT NULL, threads INTEGER NOT NULL,
  lora TEXT NOT NULL, env TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE replicas (
  deployment TEXT NOT NULL REFERENCES deployments(name) ON DELETE CASCADE, idx INTEGER NOT NULL,
  processor_id TEXT NOT NULL, price_per_day REAL NOT NULL, state TEXT NOT NULL, progress REAL NOT NULL,
  detail TEXT NOT NULL, prefill_tps REAL NOT NULL, decode_tps REAL NOT NULL, matched_ms INTEGER NOT NULL,
  ready_since_ms INTEGER NOT NULL, cost REAL NOT NULL, PRIMARY KEY (deployment, idx));
INSERT INTO processors VALUES ('old1', 'old', 1, 1, 4, 4, 'x86_64', 'linux', '[]', 1, 2, '', 0.5, 0, 0, 5, 6);
INSERT INTO deployments VALUES ('dep', 'http://h/m.gguf',
  'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 0, 0, '', 0, 0, '[]', 1, 0, 1, 2048, 2, 0, '[]', '[]', 7);
INSERT INTO replicas VALUES ('dep', 0, 'old1', 0.5, 'ready', 1, '', 10, 5, 3, 4, 0);
PRAGMA user_version = 1;
)sql";
    ASSERT_TRUE((*raw)->exec(kSchemaOneWithRows).ok());
  }
  auto store = open_or_die(db.path());
  ASSERT_NE(store, nullptr);
  auto p = store->processor("old1");
  ASSERT_TRUE(p.ok() && p->has_value()) << p.status().to_string();
  EXPECT_EQ((*p)->name, "old");
  EXPECT_FALSE((*p)->simulated);
  EXPECT_EQ((*p)->enrollment, Enrollment::Enrolled) << "a device from before enrolment was admitted then";
  auto d = store->deployment("dep");
  ASSERT_TRUE(d.ok() && d->has_value()) << d.status().to_string();
  EXPECT_FALSE((*d)->spec.engine.simulated);
  // Later migrations' columns read as their defaults.
  EXPECT_EQ((*d)->spec.gateway.queue_max, 64);
  EXPECT_EQ((*d)->spec.gateway.queue_timeout_ms, 30000);
  EXPECT_EQ((*d)->spec.gateway.alias, "");
  EXPECT_FALSE((*d)->spec.requirements.charging_only);
  EXPECT_EQ((*d)->spec.requirements.min_battery, 0);
  EXPECT_EQ((*d)->spec.requirements.max_temperature_c, 0);
  // A row from before rolling updates serves what its deployment asks for.
  const Replica row = replica_at(*store, "dep", 0);
  EXPECT_EQ(row.serving, serving_of((*d)->spec));
  EXPECT_EQ(row.serving.model_sha256, std::string(64, 'b'));
  EXPECT_EQ(row.serving.engine.ctx_size, 2048);
  EXPECT_FALSE(row.reloading);
}

TEST(SqliteStore, GarbageFileIsDataLoss) {
  TempDb db;
  {
    std::ofstream out(db.path(), std::ios::binary);
    for (int i = 0; i < 64; ++i) out << "this is not a database, just some text line " << i << "\n";
  }
  auto store = open_sqlite_store(db.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::DataLoss) << store.status().to_string();
  EXPECT_NE(store.status().message().find(db.path()), std::string::npos);
}

TEST(SqliteStore, UnopenablePathIsAnError) {
  auto store = open_sqlite_store("/nonexistent-cellserve-dir/sub/hub.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::Internal) << store.status().to_string();
}

TEST(SqliteStore, InMemoryDatabaseWorks) {
  auto store = open_or_die(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("m", 1, 0, kT0)).ok());
  EXPECT_EQ(replicas_of(*store, "m").size(), 1u);
}

// A hub.db of schema 15 (spec fields in columns) becomes one of documents: every field of every
// row reads as it did, and the file takes new deployments, scaling and updates afterwards.
TEST(SqliteStore, SchemaFifteenSpecColumnsBecomeDocuments) {
  TempDb db;
  DeploymentSpec spec = test_specs::every_field_spec();
  // Fields added after schema 15 were never columns: they read as their defaults.
  spec.gateway.verify_fraction = 0;
  spec.gateway.verify_agreement = "text";
  {
    // serve's settings and the workload, too (issue 48).
    EngineSettings schema15;
    schema15.ctx_size = spec.engine.ctx_size;
    schema15.parallel = spec.engine.parallel;
    schema15.threads = spec.engine.threads;
    schema15.lora = spec.engine.lora;
    schema15.simulated = spec.engine.simulated;
    spec.engine = schema15;
  }
  spec.autoscale = {};  // and autoscaling
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok()) << raw.status().to_string();
    const auto migrations = hub_schema_migrations();
    ASSERT_GE(migrations.size(), 15u);
    for (size_t v = 0; v < 15; ++v) ASSERT_TRUE((*raw)->exec(migrations[v]).ok()) << v;
    // The values of every_field_spec(), as schema 15 held them.
    const std::string sha(64, 'e');
    const std::string lora =
        R"(["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0.5 https://x/a.gguf",)"
        R"("hf://o/r/b.gguf"])";
    const std::string rows =
        "INSERT INTO deployments (name, model_url, model_sha256, min_ram_bytes, min_cores, req_arch, min_decode_tps, "
        "attested_only, allow_list, replicas, spares, max_price_per_day, ctx_size, parallel, threads, lora, env, "
        "created_ms, simulated, alias, queue_max, queue_timeout_ms, hedge_max_tokens, hedge_delay_ms, "
        "secrets_version, batch_reserve_slots, charging_only, min_battery, max_temperature_c, first_byte_timeout_ms) "
        "VALUES ('every-field', 'hf://org/model/model-q4_k_m.gguf', '" +
        sha + "', " + std::to_string((12ULL << 30) + 7) +
        ", 6, 'aarch64', 5.25, 1, '[\"abc\",\"phone \\\"1\\\"\"]', 3, 2, 0.1, 8192, 3, 5, '" + lora +
        "', '[[\"TOKEN\",\"s3cr\\\"et\"],[\"A_B\",\"\"]]', 1700000000000, 1, 'gpt-4o-mini', 9, 1500, 64, 250, 4, 0, 1, "
        "35, 41.5, 4000);"
        "INSERT INTO deployments (name, model_url, model_sha256, min_ram_bytes, min_cores, req_arch, min_decode_tps, "
        "attested_only, allow_list, replicas, spares, max_price_per_day, ctx_size, parallel, threads, lora, env, "
        "created_ms) VALUES ('plain', 'http://h/m.gguf', '" +
        sha + "', 0, 0, '', 0, 0, '[]', 1, 0, 2, 0, 0, 0, '[]', '[]', 1700000000001);" +
        "INSERT INTO replicas (deployment, idx, processor_id, price_per_day, state, progress, detail, prefill_tps, "
        "decode_tps, matched_ms, ready_since_ms, cost, draining, model_url, model_sha256, ctx_size, parallel, threads, "
        "lora, simulated, reloading, secrets_version) VALUES ('every-field', 0, 'p1', 0.5, 'ready', 1, 'ok', 10, 5, 3, "
        "4, 0.25, 1, 'hf://org/model/model-q4_k_m.gguf', '" +
        sha + "', 8192, 3, 5, '" + lora +
        "', 1, 1, 4), ('plain', 0, '', 0, 'unmatched', 0, '', 0, 0, 0, 0, 0, 0, 'http://old/m.gguf', '" +
        std::string(64, 'b') + "', 0, 0, 0, '[]', 0, 0, 0);";
    ASSERT_TRUE((*raw)->exec(rows.c_str()).ok());
  }
  auto store = open_or_die(db.path());
  ASSERT_NE(store, nullptr);
  auto got = store->deployment("every-field");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().to_string();
  EXPECT_EQ((*got)->spec, spec);
  EXPECT_EQ((*got)->created_ms, kT0);
  EXPECT_EQ((*got)->secrets_version, 4);
  const Replica row = replica_at(*store, "every-field", 0);
  EXPECT_EQ(row.serving, serving_of(spec));
  EXPECT_EQ(row.processor_id, "p1");
  EXPECT_EQ(row.state, ReplicaState::Ready);
  EXPECT_EQ(row.detail, "ok");
  EXPECT_EQ(row.cost, 0.25);
  EXPECT_TRUE(row.draining);
  EXPECT_TRUE(row.reloading);
  EXPECT_EQ(row.secrets_version, 4);

  auto plain = store->deployment("plain");
  ASSERT_TRUE(plain.ok() && plain->has_value()) << plain.status().to_string();
  DeploymentSpec want;
  want.name = "plain";
  want.model_url = "http://h/m.gguf";
  want.model_sha256 = spec.model_sha256;
  want.max_price_per_day = 2;
  EXPECT_EQ((*plain)->spec, want) << "columns a migration added read as their defaults";
  EXPECT_EQ(replica_at(*store, "plain", 0).serving.model_url, "http://old/m.gguf");

  // The dropped columns no longer hold anything back.
  ASSERT_TRUE(store->scale_deployment("plain", 2, 0, kT0 + 1).ok());
  EXPECT_EQ(replica_at(*store, "plain", 1).serving, serving_of(want));
  want.replicas = 2;
  want.gateway.alias = "renamed";
  ASSERT_TRUE(store->update_deployment_spec(want).ok());
  EXPECT_EQ((*store->deployment("plain"))->spec, want);
  ASSERT_TRUE(store->create_deployment(make_deployment("fresh", 1, 0, kT0 + 2)).ok());
  const auto all = store->deployments();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].spec.name, "every-field");
  EXPECT_EQ((*all)[2].spec.name, "fresh");
}

TEST(SqliteStore, AnUnreadableSpecDocumentIsDataLoss) {
  TempDb db;
  auto store = open_or_die(db.path());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 1, 0, kT0)).ok());
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE((*raw)->exec("UPDATE deployments SET spec = '{\"name\":\"d\",\"replicas\":\"x\"}'").ok());
  }
  auto got = store->deployment("d");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::DataLoss);
  EXPECT_NE(got.status().message().find("replicas"), std::string::npos) << got.status().message();
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE((*raw)->exec("UPDATE deployments SET spec = '{\"name\":\"other\"}'").ok());
  }
  got = store->deployment("d");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::DataLoss);
}

}  // namespace
}  // namespace cellserve::fleet
