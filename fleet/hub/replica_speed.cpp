#include "fleet/hub/replica_speed.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cellserve::fleet {
namespace {

double bounded(double tps) { return std::clamp(tps, 0.0, kMaxMeasuredTps); }

// The seconds `speeds` predict for the answer's tokens; 0 when they predict nothing.
double predicted_seconds(const AnswerSample& s, const SpeedFigures& speeds) {
  double t = 0;
  if (s.prompt_tokens > 0 && speeds.prefill_tps > 0) t += s.prompt_tokens / speeds.prefill_tps;
  if (s.completion_tokens > 0 && speeds.decode_tps > 0) t += s.completion_tokens / speeds.decode_tps;
  return t;
}

}  // namespace

void SpeedMeter::add(const AnswerSample& s, const SpeedFigures& claimed) {
  if (!(s.total_s > 0) || !std::isfinite(s.total_s)) return;
  ++answers_;
  if (s.streamed) {
    // The first token comes after the prompt is read: its time per prompt token is the prefill.
    if (s.prompt_tokens > 0 && s.first_token_s > 0) prefill_.add(bounded(s.prompt_tokens / s.first_token_s));
    // The tokens after the first, over the time after it.
    const double decoding_s = s.total_s - s.first_token_s;
    if (s.completion_tokens >= 2 && decoding_s > 0) decode_.add(bounded((s.completion_tokens - 1) / decoding_s));
  } else {
    // One time for both phases: both figures scale by how far off their prediction was.
    const SpeedFigures shape{prefill_.samples > 0 ? prefill_.value : kPriorPrefillTps,
                             decode_.samples > 0 ? decode_.value : kPriorDecodeTps};
    if (const double predicted = predicted_seconds(s, shape); predicted > 0) {
      const double scale = predicted / s.total_s;
      if (s.prompt_tokens > 0) prefill_.add(bounded(shape.prefill_tps * scale));
      if (s.completion_tokens > 0) decode_.add(bounded(shape.decode_tps * scale));
    }
  }
  if (const double claimed_s = predicted_seconds(s, claimed); claimed_s > 0) {
    claim_ratio_.add(s.total_s / (claimed_s + kLatencyAllowanceS));
  }
}

bool SpeedMeter::claim_inflated() const {
  return claim_ratio_.samples >= kTrustedSamples && claim_ratio_.value >= kInflatedClaimFactor;
}

double routed_figure(double claimed, const Ewma& measured, double prior) {
  double v = claimed > 0 ? claimed : std::numeric_limits<double>::infinity();
  if (measured.samples > 0) v = std::min(v, measured.value);
  if (measured.samples < kTrustedSamples) v = std::min(v, prior);
  return v;
}

SpeedFigures routed_speeds(const SpeedFigures& claimed, const SpeedMeter& meter) {
  return {routed_figure(claimed.prefill_tps, meter.prefill(), kPriorPrefillTps),
          routed_figure(claimed.decode_tps, meter.decode(), kPriorDecodeTps)};
}

}  // namespace cellserve::fleet
