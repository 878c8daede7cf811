// The one way to handle a Status that its caller cannot return: a store write made by a
// background loop or a destructor, whose failure must still not pass unseen.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve {

// Logs a failed `s` as "<context>: <status>" through `log` (stderr when `log` is empty); says
// nothing of an OK one. Returns s.ok(), so that the caller can skip what depended on it (a batch
// is not finalized when its lines could not be failed).
bool log_if_failed(const Status& s, std::string_view context, const std::function<void(const std::string&)>& log = {});

}  // namespace cellserve
