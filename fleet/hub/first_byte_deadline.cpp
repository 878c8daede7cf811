#include "fleet/hub/first_byte_deadline.h"

#include <algorithm>

namespace cellserve::fleet {

std::chrono::milliseconds first_byte_limit(const GatewaySettings& g, const RequestWork& work, bool streamed) {
  if (g.first_byte_timeout_ms > 0) return std::chrono::milliseconds(g.first_byte_timeout_ms);
  double seconds = std::max(0.0, work.prompt_tokens) / kSlowestPrefillTps;
  if (!streamed) seconds += std::max(0.0, work.max_tokens) / kSlowestDecodeTps;
  const double capped = std::min(seconds, std::chrono::duration<double>(kMaxFirstByteLimit - kFirstByteBase).count());
  return kFirstByteBase + std::chrono::milliseconds(static_cast<int64_t>(capped * 1000));
}

bool FirstByteDeadlineWriter::client_gone() {
  if (out_.client_gone()) return true;
  if (!started_ && clock_.now() >= deadline_) expired_ = true;
  return expired_;
}

}  // namespace cellserve::fleet
