// The settings of a simulated engine (`cellserve agent --simulate prefill=400,decode=20,slots=4`):
// how fast it reads a prompt, how fast it writes, and how many requests it runs at once.
// docs/fleet.md, "Simulate mode".
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::engine::simulated {

struct SimulateOptions {
  double prefill_tps = 400;  // prompt tokens read per second
  double decode_tps = 20;    // tokens written per second, per running request
  int slots = 4;             // requests run at once; the rest wait in the scheduler's queue
  // A test knob: the agent reports prefill and decode speeds this many times what it runs at (a
  // device lying about its speed, for the hub's measured routing: tests/fleet/e2e/measured.test.mjs).
  double claim = 1;
  double claimed_prefill_tps() const { return prefill_tps * claim; }
  double claimed_decode_tps() const { return decode_tps * claim; }
  // A test knob (canned=1): every prompt gets the same answer, as a device that returns a fixed
  // text instead of running the model would; what the hub's spot checks must catch.
  bool canned = false;
  // A test knob (fail=500): the agent answers every POST to the replica with this status (429 or a
  // 5xx), as a sick replica whose health still looks fine; what the hub's failover and ejection
  // must absorb (tests/fleet/e2e/healing.test.mjs). 0: never.
  int fail_status = 0;
};

// Bounds that keep a simulated step short enough to stop promptly and the slot count within
// what the scheduler supports.
inline constexpr double kMinRate = 1;
inline constexpr double kMaxPrefillRate = 1e6;
inline constexpr double kMaxDecodeRate = 1e5;
inline constexpr int kMaxSlots = 32;
inline constexpr double kMaxClaim = 1000;

// Parses "key=value,key=value" with the keys prefill, decode, slots, claim, canned (0 or 1) and
// fail (429 or 500-599)
// (each optional, at most once; the defaults above). InvalidArgument naming the key for an unknown
// or repeated key, a value that is not a number (slots: not an integer), or one outside its bounds.
Result<SimulateOptions> parse_simulate_options(std::string_view text);

// "prefill=400,decode=20,slots=4" (",claim=F" when not 1, ",canned=1", ",fail=N" when set): what
// parse_simulate_options() reads back.
std::string simulate_options_text(const SimulateOptions& options);

}  // namespace cellserve::engine::simulated
