// The autoscaling keys of a deployment spec (docs/autoscale.md): min_replicas, max_replicas,
// max_total_price_per_day, target_wait_s, batch_deadline, cooldown_s and the [[schedule]] tables,
// read and written beside the rest of the spec (deployment_spec.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "fleet/spec/spec_fields.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

// A deployment's [[schedule]] windows at most, and the longest one.
inline constexpr size_t kMaxScheduleWindows = 16;
inline constexpr int64_t kMaxScheduleWindowS = 7 * 86400;

// "90s", "15m", "4h", "2d", "1h30m" (units s, m, h, d, largest first) → seconds, at most 365 days.
// InvalidArgument otherwise.
Result<int64_t> parse_duration_s(std::string_view text);
// The inverse: the shortest such text ("4h", "1h30m", "90s"; "0s" for 0).
std::string format_duration_s(int64_t seconds);

// Reads the autoscaling keys of the spec's top level into spec.autoscale, each checked with an
// error naming it. When autoscaling, spec.replicas (the count to start with) becomes
// min_replicas unless `replicas_given`, and must lie between min_replicas and max_replicas.
Status read_autoscale_fields(SpecFields& top, DeploymentSpec& spec, bool replicas_given);

// The same keys in the API's form (deployment_spec_json); none when autoscaling is off.
void add_autoscale_json(const AutoscaleSettings& autoscale, boost::json::object& o);

}  // namespace cellserve::fleet
