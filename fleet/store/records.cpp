#include "fleet/store/records.h"

#include <array>

namespace cellserve::fleet {
namespace {

// Indexed by ReplicaState; the names are stored in the database and shown by the hub's API.
constexpr std::array<const char*, 8> kStateNames = {"unmatched", "matched", "downloading", "loading",
                                                    "tuning",    "ready",   "failed",      "offline"};

}  // namespace

const char* replica_state_name(ReplicaState state) {
  auto i = static_cast<size_t>(state);
  return i < kStateNames.size() ? kStateNames[i] : "unknown";
}

std::optional<ReplicaState> parse_replica_state(std::string_view name) {
  for (size_t i = 0; i < kStateNames.size(); ++i) {
    if (name == kStateNames[i]) return static_cast<ReplicaState>(i);
  }
  return std::nullopt;
}

namespace {
constexpr std::array<const char*, 3> kEnrollmentNames = {"enrolled", "pending", "revoked"};
}  // namespace

const char* enrollment_name(Enrollment e) {
  auto i = static_cast<size_t>(e);
  return i < kEnrollmentNames.size() ? kEnrollmentNames[i] : "unknown";
}

std::optional<Enrollment> parse_enrollment(std::string_view name) {
  for (size_t i = 0; i < kEnrollmentNames.size(); ++i) {
    if (name == kEnrollmentNames[i]) return static_cast<Enrollment>(i);
  }
  return std::nullopt;
}

}  // namespace cellserve::fleet
