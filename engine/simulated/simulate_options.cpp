#include "engine/simulated/simulate_options.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

namespace cellserve::engine::simulated {
namespace {

Status bad(std::string_view key, const std::string& why) {
  return Status::invalid_argument("--simulate " + std::string(key) + ": " + why);
}

// A finite number in [lo, hi], the whole of `text`.
Result<double> read_number(std::string_view key, std::string_view text, double lo, double hi) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return bad(key, "'" + std::string(text) + "' is not a number");
  }
  if (v < lo || v > hi) {
    std::ostringstream range;
    range << "must be in [" << lo << ", " << hi << "], not " << text;
    return bad(key, range.str());
  }
  return v;
}

}  // namespace

Result<SimulateOptions> parse_simulate_options(std::string_view text) {
  SimulateOptions o;
  if (text.empty()) return Status::invalid_argument("--simulate: expected prefill=N,decode=N,slots=N");
  std::set<std::string, std::less<>> seen;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return Status::invalid_argument("--simulate: trailing ','");
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::invalid_argument("--simulate: '" + std::string(item) + "' is not key=value");
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (!seen.insert(std::string(key)).second) return bad(key, "given twice");
    if (key == "prefill") {
      CS_ASSIGN_OR_RETURN(o.prefill_tps, read_number(key, value, kMinRate, kMaxPrefillRate));
    } else if (key == "decode") {
      CS_ASSIGN_OR_RETURN(o.decode_tps, read_number(key, value, kMinRate, kMaxDecodeRate));
    } else if (key == "slots") {
      CS_ASSIGN_OR_RETURN(const double slots, read_number(key, value, 1, kMaxSlots));
      if (slots != std::floor(slots)) return bad(key, "must be an integer, not " + std::string(value));
      o.slots = static_cast<int>(slots);
    } else if (key == "claim") {
      CS_ASSIGN_OR_RETURN(o.claim, read_number(key, value, 1, kMaxClaim));
    } else if (key == "canned") {
      if (value != "0" && value != "1") return bad(key, "must be 0 or 1, not " + std::string(value));
      o.canned = value == "1";
    } else if (key == "fail") {
      CS_ASSIGN_OR_RETURN(const double status, read_number(key, value, 429, 599));
      if (status != std::floor(status) || (status != 429 && status < 500)) {
        return bad(key, "must be 429 or a status in [500, 599], not " + std::string(value));
      }
      o.fail_status = static_cast<int>(status);
    } else {
      return bad(key, "unknown key (known: prefill, decode, slots, claim, canned, fail)");
    }
  }
  return o;
}

std::string simulate_options_text(const SimulateOptions& o) {
  std::ostringstream out;
  out << "prefill=" << o.prefill_tps << ",decode=" << o.decode_tps << ",slots=" << o.slots;
  if (o.claim != 1) out << ",claim=" << o.claim;
  if (o.canned) out << ",canned=1";
  if (o.fail_status != 0) out << ",fail=" << o.fail_status;
  return out.str();
}

}  // namespace cellserve::engine::simulated
