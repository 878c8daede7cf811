// What an agent tells the hub about its device: RAM, free disk, cores (and how many are
// performance cores on big.LITTLE), CPU features, architecture and OS, plus a short benchmark of
// the engine on a synthetic model of a reference shape.
#pragma once

#include <string>

#include "base/status.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

// Reads /proc/meminfo, statvfs(data_dir), sysfs CPU topology, the CPU's features and uname.
Result<ProcessorSpecs> detect_specs(const std::string& data_dir);

// Replaces fields of `specs` with those in the JSON file at `path` (keys as in the hub's
// /agent/info "specs": ram_bytes, free_disk_bytes, cores, big_cores, arch, os, cpu_features).
// For tests and for devices whose detection is wrong; the hub is told the overridden values.
Status apply_specs_override(const std::string& path, ProcessorSpecs* specs);

// Writes (once, cached under data_dir/benchmark/) a synthetic qwen3 model of the preset `shape`
// in Q4_0 and measures prompt (64 tokens) and generation (16 steps) speed with the default thread
// count. "" shape: no benchmark (zeros).
Result<ProcessorBenchmark> run_benchmark(const std::string& data_dir, const std::string& shape);

}  // namespace cellserve::fleet
