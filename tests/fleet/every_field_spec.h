// A deployment spec with every field set to a value other than its default, for the tests that
// round-trip a spec (fleet/spec's document, the store). The members are taken apart with
// structured bindings: a field added to DeploymentSpec, Requirements, EngineSettings or
// GatewaySettings stops this header compiling until it is set here too, and the round-trip tests
// then fail until deployment_spec.cpp's spec_fields() writes and reads it.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fleet/spec/deployment_spec.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

// A failed comparison shows the stored documents, not the structs' bytes.
inline void PrintTo(const DeploymentSpec& spec, std::ostream* os) { *os << deployment_spec_document(spec); }
inline void PrintTo(const Serving& serving, std::ostream* os) { *os << serving_document(serving); }

}  // namespace cellserve::fleet

namespace cellserve::fleet::test_specs {

// Each struct's members, in declaration order.
inline auto members(Requirements& q) {
  auto& [min_ram_bytes, min_cores, arch, min_decode_tps, attested_only, allow, charging_only, min_battery,
         max_temperature_c] = q;
  return std::tie(min_ram_bytes, min_cores, arch, min_decode_tps, attested_only, allow, charging_only, min_battery,
                  max_temperature_c);
}
inline auto members(EngineSettings& e) {
  auto& [ctx_size, parallel, threads, lora, simulated, chat_template, chat_template_jinja, kv_type, batch_size,
         prefill_chunk, embeddings, pooling, mlock, special_in_content, workload] = e;
  return std::tie(ctx_size, parallel, threads, lora, simulated, chat_template, chat_template_jinja, kv_type, batch_size,
                  prefill_chunk, embeddings, pooling, mlock, special_in_content, workload);
}
inline auto members(GatewaySettings& g) {
  auto& [alias, queue_max, queue_timeout_ms, hedge_max_tokens, hedge_delay_ms, batch_reserve_slots,
         first_byte_timeout_ms, verify_fraction, verify_agreement] = g;
  return std::tie(alias, queue_max, queue_timeout_ms, hedge_max_tokens, hedge_delay_ms, batch_reserve_slots,
                  first_byte_timeout_ms, verify_fraction, verify_agreement);
}
inline auto members(AutoscaleSettings& a) {
  auto& [min_replicas, max_replicas, max_total_price_per_day, target_wait_s, batch_deadline_s, cooldown_s, schedules] =
      a;
  return std::tie(min_replicas, max_replicas, max_total_price_per_day, target_wait_s, batch_deadline_s, cooldown_s,
                  schedules);
}
inline auto members(DeploymentSpec& s) {
  auto& [name, model_url, model_sha256, requirements, replicas, spares, max_price_per_day, engine, gateway, autoscale,
         env] = s;
  return std::tie(name, model_url, model_sha256, requirements, replicas, spares, max_price_per_day, engine, gateway,
                  autoscale, env);
}

inline DeploymentSpec every_field_spec() {
  DeploymentSpec s;
  auto [name, model_url, model_sha256, requirements, replicas, spares, max_price_per_day, engine, gateway, autoscale,
        env] = members(s);
  name = "every-field";
  model_url = "hf://org/model/model-q4_k_m.gguf";
  model_sha256 = std::string(64, 'e');
  replicas = 3;
  spares = 2;
  max_price_per_day = 0.1;  // not exact in binary: read back bit for bit
  env = {{"TOKEN", "s3cr\"et"}, {"A_B", ""}};
  {
    auto [min_ram_bytes, min_cores, arch, min_decode_tps, attested_only, allow, charging_only, min_battery,
          max_temperature_c] = members(requirements);
    min_ram_bytes = (12ULL << 30) + 7;
    min_cores = 6;
    arch = "aarch64";
    min_decode_tps = 5.25;
    attested_only = true;
    allow = {"abc", "phone \"1\""};
    charging_only = true;
    min_battery = 35;
    max_temperature_c = 41.5;
  }
  {
    auto [ctx_size, parallel, threads, lora, simulated, chat_template, chat_template_jinja, kv_type, batch_size,
          prefill_chunk, embeddings, pooling, mlock, special_in_content, workload] = members(engine);
    workload = Workload{7000, 8, 4, "latency", 90};
    ctx_size = 8192;
    chat_template = "chatml";
    chat_template_jinja = "{% for m in messages %}{{ m.content }}\n{% endfor %}";  // both: only stored, never served
    kv_type = "q8_0";
    batch_size = 256;
    prefill_chunk = 128;
    embeddings = true;
    pooling = "mean";
    mlock = true;
    special_in_content = true;
    parallel = 3;
    threads = 5;
    // Built by append, not `string + "..."` in the braces: GCC 12 warns falsely (-Warray-bounds)
    // on that temporary when GoogleTest comes from the precompiled header.
    lora = {std::string(64, 'a').append(" 0.5 https://x/a.gguf"), "hf://o/r/b.gguf"};  // stored as given
    simulated = true;
  }
  {
    auto [alias, queue_max, queue_timeout_ms, hedge_max_tokens, hedge_delay_ms, batch_reserve_slots,
          first_byte_timeout_ms, verify_fraction, verify_agreement] = members(gateway);
    alias = "gpt-4o-mini";
    queue_max = 9;
    queue_timeout_ms = 1500;
    hedge_max_tokens = 64;
    hedge_delay_ms = 250;
    batch_reserve_slots = 0;
    first_byte_timeout_ms = 4000;
    verify_fraction = 0.02;  // not exact in binary
    verify_agreement = "first_line";
  }
  {
    auto [min_replicas, max_replicas, max_total_price_per_day, target_wait_s, batch_deadline_s, cooldown_s, schedules] =
        members(autoscale);
    min_replicas = 2;
    max_replicas = 40;
    max_total_price_per_day = 3.3;  // not exact in binary
    target_wait_s = 2.5;
    batch_deadline_s = 4 * 3600;
    cooldown_s = 90;
    schedules = {{"0 1 * * *", 30, 4 * 3600}, {"*/15 9-17 * * 1-5", 5, 600}};
  }
  return s;
}

// Fails the test for each member of `set` that still has the value of the same member of a
// default-constructed T: every_field_spec() must really set every field.
template <class T>
void expect_every_member_differs(T set) {
  T fresh{};
  auto a = members(set);
  auto b = members(fresh);
  const auto differs = [&]<size_t I>(std::integral_constant<size_t, I>) {
    EXPECT_FALSE(std::get<I>(a) == std::get<I>(b)) << "member " << I << " keeps its default";
  };
  [&]<size_t... I>(std::index_sequence<I...>) { (differs(std::integral_constant<size_t, I>{}), ...); }
  (std::make_index_sequence<std::tuple_size_v<decltype(a)>>{});
}

inline void expect_every_field_set(DeploymentSpec s) {
  expect_every_member_differs(s);
  expect_every_member_differs(s.requirements);
  expect_every_member_differs(s.engine);
  expect_every_member_differs(s.gateway);
  expect_every_member_differs(s.autoscale);
}

}  // namespace cellserve::fleet::test_specs
