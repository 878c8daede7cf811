// Files only their owner may read (a device's identity key, the hub's secrets key): read with a
// refusal when others can read them, written atomically with mode 0600.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace cellserve::fleet {

// The first `max_bytes` of the file at `path`; nullopt when it does not exist. PermissionDenied
// "<path>: the <what> is readable by others (chmod 600 it)" when group or others may read it;
// Internal (naming the path and the failed call) for other I/O errors.
Result<std::optional<std::string>> read_private_file(const std::string& path, const std::string& what,
                                                     size_t max_bytes);

// Creates `path` holding `text`, mode 0600, through "<path>.tmp" (created O_EXCL | O_NOFOLLOW,
// fsync'd, then linked into place): never through a symbolic link, and never over anything
// already at `path` (Internal "<path>: create: File exists").
Status write_private_file(const std::string& path, const std::string& text);

}  // namespace cellserve::fleet
