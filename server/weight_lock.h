// `serve --mlock`: keeps the model's weights in RAM. On a phone the weights are the bulk of the
// process; under memory pressure Android compresses anonymous pages (zram) and drops file pages,
// and every decode step then reads them back from flash. Locked pages stay.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "engine/models/model.h"

namespace cellserve::server {

// Locks every range of model.resident_weights(). On failure nothing stays locked and the error
// (ResourceExhausted) gives the numbers: "--mlock: cannot lock the weights' 5.6 GiB:
// RLIMIT_MEMLOCK allows 8 MiB (ulimit -l; LimitMEMLOCK= for a systemd service)".
Status lock_weights(const engine::Model& model);

// The message above for `bytes` that mlock refused with `error` (an errno), the soft
// RLIMIT_MEMLOCK being `limit_bytes` (UINT64_MAX: unlimited).
std::string mlock_refusal(uint64_t bytes, int error, uint64_t limit_bytes);

// This process's locked memory (/proc/self/status VmLck), or 0 where it cannot be read.
uint64_t locked_bytes();

}  // namespace cellserve::server
