#include "fleet/spec/deployment_spec.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

const char* kFull = R"(
name = "fraud-risk"
replicas = 2
spares = 1
max_price_per_day = 1.5

[model]
url = "http://127.0.0.1:8000/files/qwen3.gguf"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

[requirements]
min_ram = "12G"
min_cores = 4
arch = "aarch64"
min_decode_tps = 10
attested_only = true
allow = ["phone-1"]

[engine]
ctx_size = 8192
parallel = 2
threads = 4

[[engine.lora]]
url = "http://127.0.0.1:8000/files/adapter.gguf"
sha256 = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
scale = 0.5

[env]
API_TOKEN = "s3cret"
)";

Result<DeploymentSpec> parse_toml(const std::string& text) {
  CS_ASSIGN_OR_RETURN(boost::json::value v, toml_to_json(text, "spec.toml"));
  return parse_deployment_spec(v);
}

std::string error_of(const std::string& text) {
  auto r = parse_toml(text);
  return r.ok() ? "ok" : r.status().message();
}

TEST(DeploymentSpec, ReadsEveryField) {
  auto spec = parse_toml(kFull);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  EXPECT_EQ(spec->name, "fraud-risk");
  EXPECT_EQ(spec->replicas, 2);
  EXPECT_EQ(spec->spares, 1);
  EXPECT_DOUBLE_EQ(spec->max_price_per_day, 1.5);
  EXPECT_EQ(spec->model_url, "http://127.0.0.1:8000/files/qwen3.gguf");
  EXPECT_EQ(spec->requirements.min_ram_bytes, 12ULL << 30);
  EXPECT_EQ(spec->requirements.min_cores, 4);
  EXPECT_EQ(spec->requirements.arch, "aarch64");
  EXPECT_DOUBLE_EQ(spec->requirements.min_decode_tps, 10);
  EXPECT_TRUE(spec->requirements.attested_only);
  EXPECT_EQ(spec->requirements.allow, std::vector<std::string>{"phone-1"});
  EXPECT_EQ(spec->engine.ctx_size, 8192);
  EXPECT_EQ(spec->engine.parallel, 2);
  EXPECT_EQ(spec->engine.threads, 4);
  ASSERT_EQ(spec->engine.lora.size(), 1u);
  auto lora = decode_lora_ref(spec->engine.lora[0]);
  ASSERT_TRUE(lora.ok()) << lora.status().to_string();
  EXPECT_EQ(lora->url, "http://127.0.0.1:8000/files/adapter.gguf");
  EXPECT_EQ(lora->sha256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  EXPECT_DOUBLE_EQ(lora->scale, 0.5);
  ASSERT_EQ(spec->env.size(), 1u);
  EXPECT_EQ(spec->env[0].second, "s3cret");
}

TEST(DeploymentSpec, JsonRoundTripsAndHidesSecrets) {
  auto spec = parse_toml(kFull);
  ASSERT_TRUE(spec.ok());
  auto again = parse_deployment_spec(deployment_spec_json(*spec, /*with_secrets=*/true));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->requirements.min_ram_bytes, spec->requirements.min_ram_bytes);
  EXPECT_EQ(again->engine.lora, spec->engine.lora);
  EXPECT_EQ(again->env, spec->env);
  const std::string hidden = boost::json::serialize(deployment_spec_json(*spec, false));
  EXPECT_EQ(hidden.find("s3cret"), std::string::npos);
  EXPECT_NE(hidden.find("***"), std::string::npos);
}

TEST(DeploymentSpec, NamesTheKeyOfEveryMistake) {
  const std::string model =
      "[model]\nurl = \"https://x/m.gguf\"\nsha256 = "
      "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n";
  const std::string head = "name = \"a\"\nmax_price_per_day = 1\n";
  EXPECT_EQ(error_of(head + model), "ok");
  EXPECT_NE(error_of("max_price_per_day = 1\n" + model).find("name is required"), std::string::npos);
  EXPECT_NE(error_of("name = \"Bad_Name\"\nmax_price_per_day = 1\n" + model).find("name \"Bad_Name\""),
            std::string::npos);
  EXPECT_NE(error_of("name = \"a\"\n" + model).find("max_price_per_day is required"), std::string::npos);
  EXPECT_NE(error_of(head + "replicas = 0\n" + model).find("replicas must be in [1, 1000]"), std::string::npos);
  EXPECT_NE(error_of(head + "replicas = 1001\n" + model).find("replicas must be in [1, 1000]"), std::string::npos);
  EXPECT_NE(error_of(head + "spares = 1001\n" + model).find("spares must be in [0, 1000]"), std::string::npos);
  EXPECT_NE(error_of(head + "replicas = 1.5\n" + model).find("replicas must be an integer"), std::string::npos);
  EXPECT_NE(error_of(head + "replica = 2\n" + model).find("replica is not a known key"), std::string::npos);
  EXPECT_NE(error_of(head).find("[model] is required"), std::string::npos);
  EXPECT_NE(error_of(head + "[model]\nurl = \"ftp://x\"\nsha256 = \"00\"\n").find("model.url"), std::string::npos);
  EXPECT_NE(error_of(head + "[model]\nurl = \"https://x\"\nsha256 = \"00\"\n").find("model.sha256"), std::string::npos);
  EXPECT_NE(error_of(head + model + "[requirements]\nmin_ram = \"lots\"\n").find("requirements.min_ram"),
            std::string::npos);
  EXPECT_NE(error_of(head + model + "[requirements]\narch = \"mips\"\n").find("requirements.arch"), std::string::npos);
  EXPECT_NE(error_of(head + model + "[requirements]\nmin_rams = \"1G\"\n").find("requirements.min_rams is not"),
            std::string::npos);
  EXPECT_NE(error_of(head + model + "[engine]\nparallel = 99\n").find("engine.parallel"), std::string::npos);
  EXPECT_NE(error_of(head + model + "[env]\n\"1X\" = \"v\"\n").find("env.1X"), std::string::npos);
  EXPECT_NE(error_of(head + model + "[env]\nX = 1\n").find("env.X must be a string"), std::string::npos);
  // Secrets travel sealed in every assignment: their number and size are bounded, and an error
  // names the variable, never the value.
  const std::string long_value(kMaxEnvValueBytes + 1, 's');
  const std::string too_long = error_of(head + model + "[env]\nHF_TOKEN = \"" + long_value + "\"\n");
  EXPECT_NE(too_long.find("env.HF_TOKEN: the value is longer than 4096 bytes"), std::string::npos) << too_long;
  EXPECT_EQ(too_long.find("sss"), std::string::npos);
  std::string many = head + model + "[env]\n";
  for (size_t i = 0; i <= kMaxEnvVars; ++i) many += "V" + std::to_string(i) + " = \"x\"\n";
  EXPECT_NE(error_of(many).find("env: at most 64 variables"), std::string::npos);
  EXPECT_TRUE(check_env_entry("HF_TOKEN", std::string(kMaxEnvValueBytes, 'x')).ok());
  EXPECT_FALSE(check_env_entry("A-B", "x").ok());
  EXPECT_FALSE(check_env_entry(std::string(129, 'A'), "x").ok());
  EXPECT_NE(error_of(head + model + "[engine]\nlora = [\"https://x/a.gguf\"]\n").find("engine.lora must be a list"),
            std::string::npos);
  EXPECT_NE(error_of(head + model + "[[engine.lora]]\nurl = \"https://x/a.gguf\"\n")
                .find("engine.lora[0].sha256 is required"),
            std::string::npos);
  EXPECT_NE(error_of(head + model + "[[engine.lora]]\nurl = \"https://x/a.gguf\"\nsha256 = \"" + std::string(64, 'a') +
                     "\"\nscale = 1e9\n")
                .find("engine.lora[0].scale"),
            std::string::npos);
  EXPECT_NE(error_of("name = \n").find("spec.toml:1:"), std::string::npos);
  EXPECT_NE(error_of(head + "when = 1979-05-27\n" + model).find("dates"), std::string::npos);
}

// Spot checks (fleet/hub/spot_checks.h): a fraction in [0, 1] and one of two comparisons.
TEST(DeploymentSpec, SpotCheckFieldsAreBoundedAndNamed) {
  const std::string model =
      "[model]\nurl = \"https://x/m.gguf\"\nsha256 = "
      "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n";
  const std::string head = "name = \"a\"\nmax_price_per_day = 1\n";
  auto spec = parse_toml(head + "verify_fraction = 0.02\nverify_agreement = \"first_line\"\n" + model);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->gateway.verify_fraction, 0.02);
  EXPECT_EQ(spec->gateway.verify_agreement, "first_line");
  auto defaults = parse_toml(head + model);
  EXPECT_EQ(defaults->gateway.verify_fraction, 0);
  EXPECT_EQ(defaults->gateway.verify_agreement, "text");
  EXPECT_NE(error_of(head + "verify_fraction = 1.5\n" + model).find("verify_fraction must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of(head + "verify_fraction = -0.1\n" + model).find("verify_fraction"), std::string::npos);
  EXPECT_NE(error_of(head + "verify_fraction = \"0.1\"\n" + model).find("verify_fraction"), std::string::npos);
  EXPECT_NE(error_of(head + "verify_agreement = \"words\"\n" + model)
                .find("verify_agreement must be \"text\" (the whole answer) or \"first_line\""),
            std::string::npos);
  // The API's JSON form carries them back.
  auto back = parse_deployment_spec(deployment_spec_json(*spec, false));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->gateway, spec->gateway);
}

TEST(DeploymentSpec, DeviceRequirementsParseCheckAndRoundTrip) {
  const std::string base = "name = \"a\"\nmax_price_per_day = 1\n[model]\nurl = \"https://x/m.gguf\"\nsha256 = \"" +
                           std::string(64, 'a') + "\"\n[requirements]\n";
  auto spec = parse_toml(base + "charging_only = true\nmin_battery = 40\nmax_temperature_c = 42.5\n");
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  EXPECT_TRUE(spec->requirements.charging_only);
  EXPECT_EQ(spec->requirements.min_battery, 40);
  EXPECT_DOUBLE_EQ(spec->requirements.max_temperature_c, 42.5);
  auto again = parse_deployment_spec(deployment_spec_json(*spec, false));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(again->requirements.charging_only);
  EXPECT_EQ(again->requirements.min_battery, 40);
  EXPECT_DOUBLE_EQ(again->requirements.max_temperature_c, 42.5);
  auto none = parse_toml(base);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->requirements.charging_only);
  EXPECT_EQ(none->requirements.min_battery, 0);
  EXPECT_EQ(none->requirements.max_temperature_c, 0);

  EXPECT_NE(error_of(base + "min_battery = 101\n").find("requirements.min_battery must be in [0, 100]"),
            std::string::npos)
      << error_of(base + "min_battery = 101\n");
  EXPECT_NE(error_of(base + "min_battery = 50.5\n").find("requirements.min_battery must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(base + "max_temperature_c = 1000\n").find("requirements.max_temperature_c"), std::string::npos);
  EXPECT_NE(error_of(base + "charging_only = \"yes\"\n").find("requirements.charging_only"), std::string::npos);
}

TEST(DeploymentSpec, SimulatedIsAnEngineFlag) {
  const std::string spec =
      "name = \"sim\"\nmax_price_per_day = 0\n[model]\nurl = \"http://127.0.0.1/none.gguf\"\nsha256 = \"" +
      std::string(64, 'a') + "\"\n";
  auto plain = parse_toml(spec);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_FALSE(plain->engine.simulated);
  EXPECT_FALSE(deployment_spec_json(*plain, true).at("engine").as_object().contains("simulated"));

  auto sim = parse_toml(spec + "[engine]\nsimulated = true\n");
  ASSERT_TRUE(sim.ok()) << sim.status().to_string();
  EXPECT_TRUE(sim->engine.simulated);
  auto again = parse_deployment_spec(deployment_spec_json(*sim, true));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(again->engine.simulated);

  EXPECT_NE(error_of(spec + "[engine]\nsimulated = \"yes\"\n").find("engine.simulated"), std::string::npos);
  EXPECT_NE(error_of(spec + "[engine]\nsimulated = 1\n").find("engine.simulated"), std::string::npos);
  EXPECT_NE(error_of(spec + "simulated = true\n").find("simulated is not a known key"), std::string::npos);
  EXPECT_NE(error_of(spec + "[engine]\nsimulated = true\n[[engine.lora]]\nurl = \"https://x/a.gguf\"\nsha256 = \"" +
                     std::string(64, 'a') + "\"\n")
                .find("engine.simulated cannot be combined with engine.lora"),
            std::string::npos);
}

// The serve settings in [engine], as `cellserve serve` takes them: read, sent back by the API in
// the form `deploy` posts, and each mistake named by its key at deploy time.
TEST(DeploymentSpec, ServeSettingsAreReadCheckedAndRoundTrip) {
  const std::string spec =
      "name = \"emb\"\nmax_price_per_day = 0\n[model]\nurl = \"http://127.0.0.1/m.gguf\"\nsha256 = \"" +
      std::string(64, 'a') + "\"\n[engine]\n";
  auto every =
      parse_toml(spec +
                 "kv_type = \"q8_0\"\nbatch_size = 256\nprefill_chunk = 64\nembeddings = true\n"
                 "pooling = \"mean\"\nmlock = true\nspecial_in_content = true\n"
                 "chat_template_jinja = \"{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}\"\n");
  ASSERT_TRUE(every.ok()) << every.status().to_string();
  EXPECT_EQ(every->engine.kv_type, "q8_0");
  EXPECT_EQ(every->engine.batch_size, 256);
  EXPECT_EQ(every->engine.prefill_chunk, 64);
  EXPECT_TRUE(every->engine.embeddings);
  EXPECT_EQ(every->engine.pooling, "mean");
  EXPECT_TRUE(every->engine.mlock);
  EXPECT_TRUE(every->engine.special_in_content);
  EXPECT_NE(every->engine.chat_template_jinja.find("m.role"), std::string::npos);
  auto again = parse_deployment_spec(deployment_spec_json(*every, true));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->engine, every->engine);
  auto builtin = parse_toml(spec + "chat_template = \"chatml\"\n");
  ASSERT_TRUE(builtin.ok()) << builtin.status().to_string();
  EXPECT_EQ(builtin->engine.chat_template, "chatml");
  EXPECT_EQ(parse_deployment_spec(deployment_spec_json(*builtin, true))->engine, builtin->engine);

  EXPECT_NE(error_of(spec + "chat_template = \"gpt-17\"\n").find("engine.chat_template: 'gpt-17' is not a built-in"),
            std::string::npos);
  EXPECT_NE(error_of(spec + "chat_template_jinja = \"{% for m in messages %}\"\n").find("engine.chat_template_jinja: "),
            std::string::npos);
  EXPECT_NE(error_of(spec + "chat_template = \"chatml\"\nchat_template_jinja = \"{{ 1 }}\"\n").find("cannot both"),
            std::string::npos);
  EXPECT_NE(error_of(spec + "chat_template_jinja = \"" + std::string(kMaxInlineChatTemplateBytes + 1, 'x') + "\"\n")
                .find("engine.chat_template_jinja: at most"),
            std::string::npos);
  EXPECT_NE(error_of(spec + "kv_type = \"q4_0\"\n").find("engine.kv_type must be f16, f32 or q8_0"), std::string::npos);
  EXPECT_NE(error_of(spec + "batch_size = -1\n").find("engine.batch_size"), std::string::npos);
  EXPECT_NE(error_of(spec + "prefill_chunk = 1000000\n").find("engine.prefill_chunk"), std::string::npos);
  EXPECT_NE(error_of(spec + "embeddings = \"yes\"\n").find("engine.embeddings"), std::string::npos);
  EXPECT_NE(error_of(spec + "embeddings = true\npooling = \"max\"\n").find("engine.pooling must be"),
            std::string::npos);
  EXPECT_NE(error_of(spec + "pooling = \"mean\"\n").find("engine.pooling needs engine.embeddings"), std::string::npos);
  EXPECT_NE(error_of(spec + "mlock = 1\n").find("engine.mlock"), std::string::npos);
  EXPECT_NE(error_of(spec + "cache_type_k = \"f16\"\n").find("engine.cache_type_k is not a known key"),
            std::string::npos);
}

// [workload] describes the deployment's requests for the agent's autotune.
TEST(DeploymentSpec, AWorkloadIsReadCheckedAndRoundTrips) {
  const std::string spec =
      "name = \"w\"\nmax_price_per_day = 0\n[model]\nurl = \"http://127.0.0.1/m.gguf\"\nsha256 = \"" +
      std::string(64, 'a') + "\"\n";
  auto none = parse_toml(spec);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->engine.workload.prompt_tokens, 0);
  EXPECT_FALSE(deployment_spec_json(*none, true).contains("workload"));
  auto w = parse_toml(spec +
                      "[workload]\nprompt_tokens = 7000\nmax_tokens = 8\nconcurrency = 4\nobjective = \"latency\"\n"
                      "autotune_seconds = 90\n");
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->engine.workload, (Workload{7000, 8, 4, "latency", 90}));
  auto again = parse_deployment_spec(deployment_spec_json(*w, true));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->engine.workload, w->engine.workload);
  auto defaults = parse_toml(spec + "[workload]\nprompt_tokens = 500\n");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->engine.workload, (Workload{500, 16, 1, "throughput", 60}));

  EXPECT_NE(error_of(spec + "[workload]\nmax_tokens = 8\n").find("workload.prompt_tokens is required"),
            std::string::npos);
  EXPECT_NE(error_of(spec + "[workload]\nprompt_tokens = 0\n").find("workload.prompt_tokens"), std::string::npos);
  EXPECT_NE(error_of(spec + "[workload]\nprompt_tokens = 100\nconcurrency = 1000\n").find("workload.concurrency"),
            std::string::npos);
  EXPECT_NE(error_of(spec + "[workload]\nprompt_tokens = 100\nobjective = \"speed\"\n")
                .find("workload.objective must be throughput or latency"),
            std::string::npos);
  EXPECT_NE(
      error_of(spec + "[workload]\nprompt_tokens = 100\nautotune_seconds = 0\n").find("workload.autotune_seconds"),
      std::string::npos);
  EXPECT_NE(
      error_of(spec + "[workload]\nprompt_tokens = 100\nsample = \"x\"\n").find("workload.sample is not a known key"),
      std::string::npos);
}

TEST(LoraRef, RoundTripsAndRejectsGarbage) {
  EXPECT_FALSE(decode_lora_ref("x").ok());
  EXPECT_FALSE(decode_lora_ref(std::string(64, 'c') + " nan https://h/a.gguf").ok());
  EXPECT_FALSE(decode_lora_ref(std::string(63, 'c') + " 1 https://h/a.gguf").ok());
  auto back = decode_lora_ref(encode_lora_ref({"https://h/a.gguf", std::string(64, 'c'), -0.25}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->url, "https://h/a.gguf");
  EXPECT_DOUBLE_EQ(back->scale, -0.25);
}

TEST(ParseSize, WholeNumbersAreExactAndSurviveARoundTrip) {
  // Found by the deployment_spec fuzzer: read through a double, this changed on each round trip.
  EXPECT_EQ(*parse_size("33333000000001419"), 33333000000001419ULL);
  EXPECT_EQ(*parse_size("976562500000000K"), 976562500000000ULL * 1024);
  EXPECT_EQ(*parse_size("1000000000000000000"), 1000000000000000000ULL);
  EXPECT_FALSE(parse_size("1000000000000000001").ok());
  EXPECT_FALSE(parse_size("99999999999999999999999").ok());
}

TEST(ParseSize, ANumberOfBytesHasTheSameBoundAsText) {
  // Found by the deployment_spec fuzzer: a JSON number above 10^18 was taken, then written back
  // as text that the reader refuses.
  const auto spec_with = [](const std::string& min_ram) {
    return parse_deployment_spec(
        boost::json::parse(R"({"name":"a","max_price_per_day":0,"model":{"url":"https://x/m.gguf","sha256":")" +
                           std::string(64, '0') + R"("},"requirements":{"min_ram":)" + min_ram + "}}"));
  };
  auto ok = spec_with("1000000000000000000");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(parse_deployment_spec(deployment_spec_json(*ok, true)).ok());
  auto big = spec_with("2333330000000001419");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("requirements.min_ram"), std::string::npos) << big.status().message();
}

TEST(ParseSize, AcceptsUsualForms) {
  EXPECT_EQ(*parse_size("12G"), 12ULL << 30);
  EXPECT_EQ(*parse_size("12GiB"), 12ULL << 30);
  EXPECT_EQ(*parse_size("512M"), 512ULL << 20);
  EXPECT_EQ(*parse_size("1.5G"), 3ULL << 29);
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_FALSE(parse_size("12X").ok());
  EXPECT_FALSE(parse_size("-1G").ok());
  EXPECT_FALSE(parse_size("").ok());
}

}  // namespace
}  // namespace cellserve::fleet
