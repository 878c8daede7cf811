#include "fleet/agent/device_specs.h"

#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "engine/kernels/cpu_features.h"
#include "engine/runtime/context.h"
#include "engine/runtime/cpu_topology.h"
#include "engine/synth/synth.h"
#include "fleet/agent/device_sensors.h"
#include "fleet/spec/agent_protocol.h"
#include "server/autotune.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::vector<std::string> feature_names() {
  const auto& f = engine::kernels::cpu_features();
  std::vector<std::string> out;
  if (f.avx2) out.push_back("avx2");
  if (f.avx512) out.push_back("avx512");
  if (f.avx512_vnni) out.push_back("avx512-vnni");
  if (f.avx512_bf16) out.push_back("avx512-bf16");
  if (f.neon) out.push_back("neon");
  if (f.dotprod) out.push_back("dotprod");
  if (f.i8mm) out.push_back("i8mm");
  return out;
}

}  // namespace

Result<ProcessorSpecs> detect_specs(const std::string& data_dir) {
  ProcessorSpecs s;
  s.ram_bytes = read_meminfo_bytes("", "MemTotal").value_or(0);
  struct statvfs vfs {};
  if (::statvfs(data_dir.c_str(), &vfs) != 0) return Status::internal(data_dir + ": cannot read free space");
  s.free_disk_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  s.cores = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  std::vector<int> cpus(static_cast<size_t>(s.cores));
  for (int i = 0; i < s.cores; ++i) cpus[static_cast<size_t>(i)] = i;
  s.big_cores = static_cast<int>(engine::performance_cpus(cpus, "/sys/devices/system/cpu").size());
  struct utsname u {};
  if (::uname(&u) == 0) {
    s.arch = u.machine;
    s.os = std::string(u.sysname) + " " + u.release;
  }
  s.cpu_features = feature_names();
  return s;
}

Status apply_specs_override(const std::string& path, ProcessorSpecs* specs) {
  std::ifstream in(path);
  if (!in) return Status::invalid_argument(path + ": cannot read the specs override");
  std::stringstream text;
  text << in.rdbuf();
  CS_ASSIGN_OR_RETURN(json::value v, parse_json(text.str(), path));
  if (!v.is_object()) return Status::invalid_argument(path + ": expected a JSON object");
  // Reuse the hub's reader of "specs" so both sides agree on names and types.
  json::object base = to_json(AgentInfo{"", 0, *specs, {}, "", false, {}}).as_object();
  json::object& merged = base["specs"].as_object();
  for (const auto& kv : v.as_object()) {
    if (!merged.contains(kv.key()))
      return Status::invalid_argument(path + ": unknown specs key '" + std::string(kv.key()) + "'");
    merged[kv.key()] = kv.value();
  }
  auto info = agent_info_from_json(base);
  if (!info.ok()) return Status::invalid_argument(path + ": " + info.status().message());
  *specs = info->specs;
  return {};
}

Result<ProcessorBenchmark> run_benchmark(const std::string& data_dir, const std::string& shape) {
  ProcessorBenchmark b;
  if (shape.empty()) return b;
  namespace synth = engine::synth;
  const fs::path dir = fs::path(data_dir) / "benchmark";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path file = dir / ("qwen3-" + shape + "-q4_0.gguf");
  if (!fs::exists(file)) {  // write_model renames a finished file into place
    CS_ASSIGN_OR_RETURN(synth::ModelPlan plan, synth::plan_model({synth::Arch::Qwen3, shape, synth::SynthType::Q4_0}));
    CS_RETURN_IF_ERROR(synth::write_model(plan, file.string()));
  }
  CS_ASSIGN_OR_RETURN(std::shared_ptr<const engine::Model> model, engine::load_model(file.string()));
  engine::ContextParams params;
  params.n_ctx = 128;
  params.n_batch = 64;
  params.n_seq_max = 1;
  params.n_threads = engine::default_thread_count();
  CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(model, params));
  const std::vector<int32_t> tokens = server::random_tokens(64, model->info().n_vocab);
  CS_ASSIGN_OR_RETURN(b.decode_tps, server::decode_rate(*ctx, tokens, 16));
  CS_ASSIGN_OR_RETURN(b.prefill_tps, server::prefill_rate(*ctx, tokens, 64));
  b.shape = "qwen3 " + shape + " Q4_0, pp64 / tg16, " + std::to_string(params.n_threads) + " threads";
  return b;
}

}  // namespace cellserve::fleet
