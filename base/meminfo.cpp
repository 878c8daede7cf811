#include "base/meminfo.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace cellserve {
namespace {

// The "Field:   123 kB" line of a /proc file, in bytes.
std::optional<uint64_t> read_kib_field(const std::filesystem::path& path, std::string_view field) {
  std::ifstream in(path);
  const std::string prefix = std::string(field) + ":";
  std::string line;
  for (int n = 0; n < 256 && std::getline(in, line); ++n) {
    if (!line.starts_with(prefix)) continue;
    std::istringstream fields(line.substr(prefix.size()));
    uint64_t kib = 0;
    if (fields >> kib && kib < (uint64_t{1} << 40)) return kib * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> read_meminfo_bytes(const std::string& root, std::string_view field) {
  namespace fs = std::filesystem;
  return read_kib_field((root.empty() ? fs::path("/") : fs::path(root)) / "proc/meminfo", field);
}

std::optional<uint64_t> read_own_status_bytes(std::string_view field) {
  return read_kib_field("/proc/self/status", field);
}

}  // namespace cellserve
