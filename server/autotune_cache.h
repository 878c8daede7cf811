// Autotune's choice kept on disk, so a reload of the same model on the same device with the same
// workload does not measure again (the agent keeps one file per model, device and workload:
// fleet/agent/replica_runtime.cpp). A file that cannot be read, or was made for another key, is
// ignored and the measurements run again.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "server/autotune.h"

namespace cellserve::server {

// The kept choice at `path` when it was written for `key`; nullopt when there is no path, no file,
// a file of another key, or one that does not read as a choice (each value bounded).
std::optional<AutotuneResult> read_autotune_cache(const std::string& path, const std::string& key);

// Keeps `result` for `key` at `path` (written whole, then renamed into place). Nothing when
// `path` is empty.
Status write_autotune_cache(const std::string& path, const std::string& key, const AutotuneResult& result);

}  // namespace cellserve::server
