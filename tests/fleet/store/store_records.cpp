#include "tests/fleet/store/store_records.h"

#include <gtest/gtest.h>

namespace cellserve::fleet {

Processor make_processor(const std::string& id, double price, int64_t registered_ms) {
  Processor p;
  p.id = id;
  p.name = "name-" + id;
  p.specs.ram_bytes = (16ULL << 30) + 7;
  p.specs.free_disk_bytes = 100ULL << 30;
  p.specs.cores = 8;
  p.specs.big_cores = 4;
  p.specs.arch = "aarch64";
  p.specs.os = "android 14";
  p.specs.cpu_features = {"neon", "dotprod", "i8mm"};
  p.benchmark.prefill_tps = 123.5;
  p.benchmark.decode_tps = 17.25;
  p.benchmark.shape = "qwen35-0.8b Q4_K_M pp512 tg128";
  p.price_per_day = price;
  p.attested = true;
  p.online = true;
  p.registered_ms = registered_ms;
  p.last_seen_ms = registered_ms + 5;
  return p;
}

Deployment make_deployment(const std::string& name, int replicas, int spares, int64_t created_ms) {
  Deployment d;
  d.spec.name = name;
  d.spec.model_url = "hf://org/model/model-q4_k_m.gguf";
  d.spec.model_sha256 = std::string(64, 'a');
  d.spec.requirements.min_ram_bytes = 12ULL << 30;
  d.spec.requirements.min_cores = 4;
  d.spec.requirements.arch = "aarch64";
  d.spec.requirements.min_decode_tps = 5.5;
  d.spec.requirements.attested_only = true;
  d.spec.requirements.allow = {"abc", "phone \"1\""};
  d.spec.requirements.charging_only = true;
  d.spec.requirements.min_battery = 35;
  d.spec.requirements.max_temperature_c = 41.5;
  d.spec.replicas = replicas;
  d.spec.spares = spares;
  d.spec.max_price_per_day = 2.5;
  d.spec.engine.ctx_size = 8192;
  d.spec.engine.parallel = 2;
  d.spec.engine.threads = 4;
  d.spec.engine.lora = {"https://x/a.gguf:0.5", "hf://o/r/b.gguf"};
  d.spec.env = {{"A", "1"}, {"B", "x=y"}};
  d.created_ms = created_ms;
  return d;
}

void expect_same(const Processor& a, const Processor& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.specs.ram_bytes, b.specs.ram_bytes);
  EXPECT_EQ(a.specs.free_disk_bytes, b.specs.free_disk_bytes);
  EXPECT_EQ(a.specs.cores, b.specs.cores);
  EXPECT_EQ(a.specs.big_cores, b.specs.big_cores);
  EXPECT_EQ(a.specs.arch, b.specs.arch);
  EXPECT_EQ(a.specs.os, b.specs.os);
  EXPECT_EQ(a.specs.cpu_features, b.specs.cpu_features);
  EXPECT_EQ(a.benchmark.prefill_tps, b.benchmark.prefill_tps);
  EXPECT_EQ(a.benchmark.decode_tps, b.benchmark.decode_tps);
  EXPECT_EQ(a.benchmark.shape, b.benchmark.shape);
  EXPECT_EQ(a.price_per_day, b.price_per_day);
  EXPECT_EQ(a.attested, b.attested);
  EXPECT_EQ(a.simulated, b.simulated);
  EXPECT_EQ(a.online, b.online);
  EXPECT_EQ(a.registered_ms, b.registered_ms);
  EXPECT_EQ(a.last_seen_ms, b.last_seen_ms);
}

void expect_same(const Requirements& a, const Requirements& b) {
  EXPECT_EQ(a.min_ram_bytes, b.min_ram_bytes);
  EXPECT_EQ(a.min_cores, b.min_cores);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.min_decode_tps, b.min_decode_tps);
  EXPECT_EQ(a.attested_only, b.attested_only);
  EXPECT_EQ(a.allow, b.allow);
  EXPECT_EQ(a.charging_only, b.charging_only);
  EXPECT_EQ(a.min_battery, b.min_battery);
  EXPECT_EQ(a.max_temperature_c, b.max_temperature_c);
}

void expect_same(const Deployment& a, const Deployment& b) {
  EXPECT_EQ(a.spec.name, b.spec.name);
  expect_same(a.spec.requirements, b.spec.requirements);
  EXPECT_EQ(a.spec.model_url, b.spec.model_url);
  EXPECT_EQ(a.spec.model_sha256, b.spec.model_sha256);
  EXPECT_EQ(a.spec.replicas, b.spec.replicas);
  EXPECT_EQ(a.spec.spares, b.spec.spares);
  EXPECT_EQ(a.spec.max_price_per_day, b.spec.max_price_per_day);
  EXPECT_EQ(a.spec.engine.ctx_size, b.spec.engine.ctx_size);
  EXPECT_EQ(a.spec.engine.parallel, b.spec.engine.parallel);
  EXPECT_EQ(a.spec.engine.threads, b.spec.engine.threads);
  EXPECT_EQ(a.spec.engine.lora, b.spec.engine.lora);
  EXPECT_EQ(a.spec.engine.simulated, b.spec.engine.simulated);
  EXPECT_EQ(a.spec.env, b.spec.env);
  EXPECT_EQ(a.created_ms, b.created_ms);
}

void expect_same(const Replica& a, const Replica& b) {
  EXPECT_EQ(a.deployment, b.deployment);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.processor_id, b.processor_id);
  EXPECT_EQ(a.price_per_day, b.price_per_day);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.progress, b.progress);
  EXPECT_EQ(a.detail, b.detail);
  EXPECT_EQ(a.prefill_tps, b.prefill_tps);
  EXPECT_EQ(a.decode_tps, b.decode_tps);
  EXPECT_EQ(a.matched_ms, b.matched_ms);
  EXPECT_EQ(a.ready_since_ms, b.ready_since_ms);
  EXPECT_DOUBLE_EQ(a.cost, b.cost);
}

std::vector<Replica> replicas_of(Store& store, const std::string& deployment) {
  auto rows = store.replicas(deployment);
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  return rows.ok() ? *rows : std::vector<Replica>{};
}

Replica replica_at(Store& store, const std::string& deployment, int index) {
  for (const Replica& r : replicas_of(store, deployment)) {
    if (r.index == index) return r;
  }
  ADD_FAILURE() << "no replica " << index << " in " << deployment;
  return {};
}

}  // namespace cellserve::fleet
