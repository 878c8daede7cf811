// Memory figures from Linux's /proc: the device's (/proc/meminfo) and this process's
// (/proc/self/status). The agent reports MemTotal and MemAvailable to the hub; `serve` and the
// agent refuse a model whose estimate exceeds MemAvailable; /metrics reports the process's
// resident, peak resident and locked memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cellserve {

// A /proc/meminfo field ("MemAvailable", "MemTotal") in bytes, from `root`/proc/meminfo ("" :
// the real /proc; tests point it at a fixture tree); nullopt when the file or the field is
// missing or garbage.
std::optional<uint64_t> read_meminfo_bytes(const std::string& root, std::string_view field);

// A field of this process's /proc/self/status given in kB ("VmRSS", "VmHWM" the peak resident
// size, "VmLck" the locked memory), in bytes; nullopt as above.
std::optional<uint64_t> read_own_status_bytes(std::string_view field);

}  // namespace cellserve
