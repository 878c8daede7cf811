// The wire form of a DeviceState (fleet/store/device_state.h): how an agent reports it in its
// status poll, and the one-line summary `fleet ls` shows.
#pragma once

#include <string>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "fleet/store/device_state.h"

namespace cellserve::fleet {

// Wire form: {"battery_percent":..., "charging":..., ...}; unknown values are omitted. The
// reader bounds every number (a peer's JSON) and ignores unknown keys.
boost::json::value to_json(const DeviceState& state);
Result<DeviceState> device_state_from_json(const boost::json::value& v);

// "battery 15% discharging, 41.0 °C, throttled to 60%, 1.2 GiB free": what `fleet ls` shows;
// "" when nothing is known.
std::string device_state_summary(const DeviceState& state);

}  // namespace cellserve::fleet
