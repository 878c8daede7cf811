#include "fleet/spec/cron_schedule.h"

#include <bit>
#include <limits>
#include <vector>

namespace cellserve::fleet {
namespace {
// A namespace of its own: a unity build (CELLSERVE_UNITY_OUTSIDE_ENGINE) compiles this file with
// others of cellserve::fleet, whose names (e.g. records.h's kMsPerDay) would otherwise collide.
namespace cron_detail {

constexpr int64_t kMinutesPerDay = 24 * 60;
constexpr int64_t kMsPerMinute = 60 * 1000;
constexpr int64_t kMsPerDay = kMinutesPerDay * kMsPerMinute;

struct FieldSpec {
  const char* name;
  int min;
  int max;
};

constexpr FieldSpec kFields[5] = {
    {"minute", 0, 59}, {"hour", 0, 23}, {"day-of-month", 1, 31}, {"month", 1, 12}, {"day-of-week", 0, 7},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// a / b rounded toward negative infinity (b > 0).
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// a mod b in [0, b) (b > 0).
int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}

struct MonthDay {
  int month;  // 1-12
  int day;    // 1-31
};

// The UTC month and day of `unix_day` (days since 1970-01-01), by Howard Hinnant's
// civil_from_days (proleptic Gregorian calendar).
MonthDay month_day_from_days(int64_t unix_day) {
  const int64_t z = unix_day + 719468;
  const int64_t era = floor_div(z, 146097);
  const int64_t doe = z - era * 146097;                                       // [0, 146096]
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11], March = 0
  return {static_cast<int>(mp < 10 ? mp + 3 : mp - 9), static_cast<int>(doy - (153 * mp + 2) / 5 + 1)};
}

// 0 for Sunday .. 6 for Saturday; 1970-01-01 was a Thursday.
int weekday_from_days(int64_t unix_day) { return static_cast<int>(floor_mod(unix_day + 4, 7)); }

// Reads one item of a field ("*", "n", "a-b", "*/n", "a-b/n") and sets its values in `bits`.
class ItemReader {
 public:
  ItemReader(std::string_view item, const FieldSpec& field) : item_(item), field_(field) {}

  Status read(uint64_t* bits) {
    int lo = field_.min;
    int hi = field_.max;
    bool range = false;
    if (peek() == '*') {
      ++pos_;
      range = true;
    } else {
      CS_RETURN_IF_ERROR(number("a number or '*'", &lo));
      CS_RETURN_IF_ERROR(in_range(lo));
      hi = lo;
      if (peek() == '-') {
        ++pos_;
        CS_RETURN_IF_ERROR(number("a number after '-'", &hi));
        CS_RETURN_IF_ERROR(in_range(hi));
        if (lo > hi) {
          return Status::invalid_argument(std::string(field_.name) + " range " + std::to_string(lo) + "-" +
                                          std::to_string(hi) + " runs backwards");
        }
        range = true;
      }
    }
    int step = 1;
    if (peek() == '/') {
      if (!range) return error("a step needs '*' or a range before it");
      ++pos_;
      CS_RETURN_IF_ERROR(number("a number after '/'", &step));
      if (step == 0) return error("step 0 is not allowed");
    }
    if (pos_ != item_.size()) return error(std::string("unexpected '") + item_[pos_] + "'");
    for (int v = lo; v <= hi; v += step) *bits |= uint64_t{1} << v;
    return {};
  }

 private:
  char peek() const { return pos_ < item_.size() ? item_[pos_] : '\0'; }

  Status error(const std::string& reason) const {
    return Status::invalid_argument(std::string(field_.name) + " '" + std::string(item_) + "': " + reason);
  }

  // Reads 1-2 digits; a longer run of digits is refused before it is converted.
  Status number(const char* expected, int* out) {
    const size_t start = pos_;
    while (pos_ < item_.size() && is_digit(item_[pos_])) ++pos_;
    const size_t n = pos_ - start;
    if (n == 0) {
      if (pos_ == item_.size()) return error(std::string("expected ") + expected + " at the end");
      return error(std::string("expected ") + expected + ", not '" + item_[pos_] + "'");
    }
    if (n > 2) {
      return Status::invalid_argument(std::string(field_.name) + " number " + std::string(item_.substr(start, n)) +
                                      " has more than 2 digits");
    }
    *out = 0;
    for (size_t i = start; i < pos_; ++i) *out = *out * 10 + (item_[i] - '0');
    return {};
  }

  Status in_range(int v) const {
    if (v >= field_.min && v <= field_.max) return {};
    return Status::invalid_argument(std::string(field_.name) + " " + std::to_string(v) + " is outside " +
                                    std::to_string(field_.min) + "-" + std::to_string(field_.max));
  }

  std::string_view item_;
  const FieldSpec& field_;
  size_t pos_ = 0;
};

// Reads one field (a comma list of items) into `bits`.
Status parse_field(std::string_view text, const FieldSpec& field, uint64_t* bits) {
  *bits = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (item.empty()) {
      return Status::invalid_argument(std::string(field.name) + " '" + std::string(text) + "' has an empty list item");
    }
    CS_RETURN_IF_ERROR(ItemReader(item, field).read(bits));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {};
}

// The fields of `text`, split at runs of spaces and tabs.
std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == '\t') {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

}  // namespace cron_detail
}  // namespace

Result<CronSchedule> CronSchedule::parse(std::string_view text) {
  if (text.size() > kMaxTextLength) {
    return Status::invalid_argument("cron text is " + std::to_string(text.size()) + " characters, more than " +
                                    std::to_string(kMaxTextLength));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c != '\t' && (c < 0x20 || c > 0x7e)) {
      return Status::invalid_argument("cron text has a control or non-ASCII character at offset " + std::to_string(i));
    }
  }
  const std::string prefix = "cron '" + std::string(text) + "': ";
  const std::vector<std::string_view> fields = cron_detail::split_fields(text);
  if (fields.size() != 5) {
    return Status::invalid_argument(prefix + "expected 5 fields (minute hour day-of-month month day-of-week), got " +
                                    std::to_string(fields.size()));
  }
  CronSchedule s;
  s.text_ = std::string(text);
  uint64_t* const bits[5] = {&s.minutes_, &s.hours_, &s.days_, &s.months_, &s.weekdays_};
  for (size_t i = 0; i < 5; ++i) {
    const Status st = cron_detail::parse_field(fields[i], cron_detail::kFields[i], bits[i]);
    if (!st.ok()) return Status::invalid_argument(prefix + st.message());
  }
  constexpr uint64_t kSunday7 = uint64_t{1} << 7;
  if ((s.weekdays_ & kSunday7) != 0) s.weekdays_ = (s.weekdays_ & ~kSunday7) | 1;
  s.days_star_ = fields[2].front() == '*';
  s.weekdays_star_ = fields[4].front() == '*';
  return s;
}

bool CronSchedule::day_matches(int64_t unix_day) const {
  const cron_detail::MonthDay md = cron_detail::month_day_from_days(unix_day);
  if (((months_ >> md.month) & 1) == 0) return false;
  const bool dom = ((days_ >> md.day) & 1) != 0;
  const bool dow = ((weekdays_ >> cron_detail::weekday_from_days(unix_day)) & 1) != 0;
  return (days_star_ || weekdays_star_) ? (dom && dow) : (dom || dow);
}

bool CronSchedule::matches(int64_t unix_minute) const {
  const int64_t minute_of_day = cron_detail::floor_mod(unix_minute, cron_detail::kMinutesPerDay);
  return ((minutes_ >> (minute_of_day % 60)) & 1) != 0 && ((hours_ >> (minute_of_day / 60)) & 1) != 0 &&
         day_matches(cron_detail::floor_div(unix_minute, cron_detail::kMinutesPerDay));
}

std::optional<int64_t> CronSchedule::window_start(int64_t now_ms, int64_t window_ms) const {
  if (window_ms <= 0) return std::nullopt;
  if (window_ms > kMaxWindowMs) window_ms = kMaxWindowMs;
  if (now_ms < std::numeric_limits<int64_t>::min() + kMaxWindowMs) return std::nullopt;
  // A minute m qualifies iff now_ms - window_ms < m * 60000 <= now_ms.
  const int64_t lo = cron_detail::floor_div(now_ms - window_ms, cron_detail::kMsPerMinute) + 1;
  int64_t m = cron_detail::floor_div(now_ms, cron_detail::kMsPerMinute);
  while (m >= lo) {
    const int64_t day = cron_detail::floor_div(m, cron_detail::kMinutesPerDay);
    const int64_t day_start = day * cron_detail::kMinutesPerDay;
    if (!day_matches(day)) {
      m = day_start - 1;  // the last minute of the day before
      continue;
    }
    const int hour = static_cast<int>((m - day_start) / 60);
    const int minute = static_cast<int>((m - day_start) % 60);
    if (((hours_ >> hour) & 1) == 0) {
      const uint64_t earlier = hours_ & ((uint64_t{1} << hour) - 1);
      m = earlier == 0 ? day_start - 1 : day_start + (std::bit_width(earlier) - 1) * 60 + 59;
      continue;
    }
    const uint64_t earlier = minutes_ & ((uint64_t{2} << minute) - 1);  // minutes <= minute
    if (earlier == 0) {
      m = day_start + hour * 60 - 1;  // the last minute of the hour before
      continue;
    }
    m = day_start + hour * 60 + (std::bit_width(earlier) - 1);
    if (m < lo) break;
    return m * cron_detail::kMsPerMinute;
  }
  return std::nullopt;
}

std::optional<int64_t> CronSchedule::next_start(int64_t now_ms) const {
  constexpr int64_t kLookaheadMs = kMaxLookaheadDays * cron_detail::kMsPerDay;
  if (now_ms > std::numeric_limits<int64_t>::max() - kLookaheadMs - cron_detail::kMsPerDay) return std::nullopt;
  // A minute m qualifies iff now_ms < m * 60000 <= now_ms + kLookaheadMs.
  const int64_t hi = cron_detail::floor_div(now_ms + kLookaheadMs, cron_detail::kMsPerMinute);
  int64_t m = cron_detail::floor_div(now_ms, cron_detail::kMsPerMinute) + 1;
  while (m <= hi) {
    const int64_t day = cron_detail::floor_div(m, cron_detail::kMinutesPerDay);
    const int64_t day_start = day * cron_detail::kMinutesPerDay;
    if (!day_matches(day)) {
      m = day_start + cron_detail::kMinutesPerDay;  // midnight of the next day
      continue;
    }
    const int hour = static_cast<int>((m - day_start) / 60);
    const int minute = static_cast<int>((m - day_start) % 60);
    if (((hours_ >> hour) & 1) == 0) {
      const uint64_t later = hours_ & ~((uint64_t{1} << hour) - 1);
      m = later == 0 ? day_start + cron_detail::kMinutesPerDay : day_start + std::countr_zero(later) * 60;
      continue;
    }
    const uint64_t later = minutes_ & ~((uint64_t{1} << minute) - 1);  // minutes >= minute
    if (later == 0) {
      m = day_start + (hour + 1) * 60;  // the start of the next hour
      continue;
    }
    m = day_start + hour * 60 + std::countr_zero(later);
    if (m > hi) break;
    return m * cron_detail::kMsPerMinute;
  }
  return std::nullopt;
}

}  // namespace cellserve::fleet
