#include "fleet/store/records.h"

#include <array>

namespace cellserve::fleet {
namespace {

// Indexed by ReplicaState; the names are stored in the database and shown by the hub's API.
constexpr std::array<const char*, 8> kStateNames = {"unmatched", "matched", "downloading", "loading",
                                                    "tuning",    "ready",   "failed",      "offline"};

constexpr std::array<const char*, 3> kEnrollmentNames = {"enrolled", "pending", "revoked"};

// An enum's stored name, from its table indexed by the enum's value ("unknown" outside it).
template <size_t N, typename E>
const char* name_in(const std::array<const char*, N>& names, E value) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : "unknown";
}

// The enum value a stored name stands for; nullopt for a name not in the table.
template <typename E, size_t N>
std::optional<E> parse_name(const std::array<const char*, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

const char* replica_state_name(ReplicaState state) { return name_in(kStateNames, state); }

std::optional<ReplicaState> parse_replica_state(std::string_view name) {
  return parse_name<ReplicaState>(kStateNames, name);
}

const char* enrollment_name(Enrollment e) { return name_in(kEnrollmentNames, e); }

std::optional<Enrollment> parse_enrollment(std::string_view name) {
  return parse_name<Enrollment>(kEnrollmentNames, name);
}

}  // namespace cellserve::fleet
