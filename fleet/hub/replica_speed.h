// What the hub measures of a replica's speed from the answers it relays, and the speeds routing
// uses: a device's own report (its status poll) may make it look slower than measured, never
// faster. Devices are rented from strangers: a claim is a hint, a measurement is a fact.
// Pure values and functions: tested without a clock or a fleet. docs/fleet.md ("Routing").
#pragma once

namespace cellserve::fleet {

// One answer as the hub relayed it: sizes clamped by what was relayed (speed_probe.h), times on
// the hub's clock from when the request left the hub.
struct AnswerSample {
  double prompt_tokens = 0;      // usage.prompt_tokens, at most one per byte of the request
  double completion_tokens = 0;  // usage.completion_tokens, at most one per byte of answer text
  bool streamed = false;
  double first_token_s = 0;  // streamed: until the first token's event; 0 for a whole answer
  double total_s = 0;        // until the answer's last byte
};

// Prompt tokens read and tokens written per second (per running request).
struct SpeedFigures {
  double prefill_tps = 0;
  double decode_tps = 0;
};

// Each answer moves a measured figure this far towards what it showed (an exponentially weighted
// moving average): the last ~8 answers dominate, so a device that slows down (heat, a shared
// CPU) is seen within a few answers, and one odd answer moves it by a quarter.
inline constexpr double kSpeedWeight = 0.25;
// Measurements of a figure before it alone (capped by the claim) decides routing. Until then the
// figure is min(claim, prior, measured so far): a fresh device, liar or not, looks no faster than
// the prior, so a new liar wins no traffic by its claim while its first answers are measured.
inline constexpr int kTrustedSamples = 3;
// The prior: speeds assumed of a device nothing is known of (a slow phone).
inline constexpr double kPriorPrefillTps = 100;
inline constexpr double kPriorDecodeTps = 10;
// A device whose claimed speeds predict its answers this many times faster than they came (a
// decaying average over kTrustedSamples answers or more) is flagged `speed_claim_inflated`.
inline constexpr double kInflatedClaimFactor = 3;
// What the hub adds to a claimed answer time before comparing (the tunnel's round trip), so an
// honest device's tiny answers are not flagged for the network's share of them.
inline constexpr double kLatencyAllowanceS = 0.05;
// Measured figures never exceed what the agent protocol accepts as a claim.
inline constexpr double kMaxMeasuredTps = 1e7;

// A decaying average of one figure.
struct Ewma {
  double value = 0;
  int samples = 0;
  void add(double x) { value = samples++ == 0 ? x : value + kSpeedWeight * (x - value); }
};

// The hub's measurements of one device serving one deployment. Not thread-safe (the registry
// guards it).
class SpeedMeter {
 public:
  // Folds in one answer: a streamed one measures prefill from its first token (time to first
  // token per prompt token) and decode from the rest; a whole answer shows one time for both, so
  // it scales both figures (as measured so far, else the prior) by how much faster or slower it
  // came than they predicted. The device's claim never shapes a measurement (a liar could move
  // time from one phase to the other); `claimed` is only compared (speed_claim_ratio()). Answers
  // that show nothing (no tokens, no time) are ignored.
  void add(const AnswerSample& s, const SpeedFigures& claimed);

  const Ewma& prefill() const { return prefill_; }
  const Ewma& decode() const { return decode_; }
  // How many times longer the answers took than the device's claimed speeds predicted (decaying
  // average; 0 before any answer with a claim).
  double speed_claim_ratio() const { return claim_ratio_.value; }
  int answers() const { return answers_; }  // answers measured
  // True once kTrustedSamples answers show the claim kInflatedClaimFactor times too fast.
  bool claim_inflated() const;

 private:
  Ewma prefill_;
  Ewma decode_;
  Ewma claim_ratio_;
  int answers_ = 0;
};

// The figure routing uses: min(claim, measured) once kTrustedSamples measurements exist; before
// that min(claim, prior, measured so far). A claim of 0 (none) never lowers it.
double routed_figure(double claimed, const Ewma& measured, double prior);
SpeedFigures routed_speeds(const SpeedFigures& claimed, const SpeedMeter& meter);

}  // namespace cellserve::fleet
