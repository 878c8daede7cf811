#include "server/weight_lock.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/meminfo.h"
#include "server/memory_estimate.h"

namespace cellserve::server {

std::string mlock_refusal(uint64_t bytes, int error, uint64_t limit_bytes) {
  std::string out = "--mlock: cannot lock the weights' " + human_bytes(bytes) + ": " + std::strerror(error);
  if (error == ENOMEM || error == EPERM || error == EAGAIN) {
    out += limit_bytes == std::numeric_limits<uint64_t>::max()
               ? "; RLIMIT_MEMLOCK is unlimited, so the RAM itself is short"
               : "; RLIMIT_MEMLOCK allows " + human_bytes(limit_bytes) +
                     " (raise it with ulimit -l, or LimitMEMLOCK= for a systemd service)";
  }
  return out;
}

Status lock_weights(const engine::Model& model) {
  const auto& ranges = model.resident_weights();
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.size();
  const uint64_t before = locked_bytes();
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].empty() || ::mlock(ranges[i].data(), ranges[i].size()) == 0) continue;
    const int error = errno;
    for (size_t j = 0; j < i; ++j) {
      if (!ranges[j].empty()) ::munlock(ranges[j].data(), ranges[j].size());
    }
    rlimit limit{};
    const uint64_t soft = ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                              ? static_cast<uint64_t>(limit.rlim_cur)
                              : std::numeric_limits<uint64_t>::max();
    return Status::resource_exhausted(mlock_refusal(total, error, soft));
  }
  // mlock can report success without locking (AddressSanitizer intercepts it as a no-op): the
  // kernel's own count says whether the pages are locked. Ranges may share a page at each end.
  const uint64_t after = locked_bytes();
  const uint64_t slack = 2 * 4096 * static_cast<uint64_t>(ranges.size());
  if (after + slack < before + total) {
    return Status::resource_exhausted("--mlock: mlock succeeded but the kernel reports " + human_bytes(after) +
                                      " locked of the weights' " + human_bytes(total) +
                                      " (a sanitizer build cannot lock memory)");
  }
  return Status();
}

uint64_t locked_bytes() { return read_own_status_bytes("VmLck").value_or(0); }

}  // namespace cellserve::server
