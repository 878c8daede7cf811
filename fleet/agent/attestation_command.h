// The agent's --attestation-command: the device's keystore helper (docs/attestation.md), run once
// per registration with the attestation challenge in hex as its last argument. Its stdout is the
// evidence JSON the agent presents at /agent/info.
#pragma once

#include <chrono>
#include <string>

#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::fleet {

inline constexpr std::chrono::seconds kAttestationCommandDeadline{30};
inline constexpr size_t kMaxAttestationOutput = 256 * 1024;

// Runs `command` through /bin/sh with `challenge_hex` appended as its last argument (quoted: the
// shell never parses it), and returns its stdout as JSON. Errors, in one line: the command did
// not start, ran past `deadline` (it is killed), exited non-zero (with the first line of its
// stderr), printed more than kMaxAttestationOutput, or printed something other than a JSON object.
Result<boost::json::value> run_attestation_command(const std::string& command, const std::string& challenge_hex,
                                                   std::chrono::milliseconds deadline = kAttestationCommandDeadline);

}  // namespace cellserve::fleet
