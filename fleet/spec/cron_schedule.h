// A deployment's schedule window: a standard 5-field cron expression, evaluated in UTC, that
// says when a window of some length begins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::fleet {

// A standard 5-field cron expression, evaluated in UTC (never local time):
//   minute hour day-of-month month day-of-week
// Each field is a comma list of items; an item is "*", a number "n", a range "a-b", or a step
// "*/n" or "a-b/n" (every n-th value from the range's start). Minute 0-59, hour 0-23, day of
// month 1-31, month 1-12, day of week 0-7 (0 and 7 are both Sunday; "5-7" is Friday to Sunday).
// Numbers have at most 2 digits; a step is 1-99. Fields are separated by spaces or tabs. There
// are no names (JAN, MON), no "@daily", no seconds field, and no "?", "L", "W" or "#".
//
// As in Vixie cron, when both day of month and day of week are restricted, a day matches when
// either matches; otherwise both must. A field counts as unrestricted when it begins with '*'
// (Vixie's rule, so "*/2" in day of month is unrestricted for this purpose, and
// "0 0 */2 * 1" means Mondays that fall on an odd day of the month).
class CronSchedule {
 public:
  // The longest text parse() accepts.
  static constexpr size_t kMaxTextLength = 200;
  // The longest window window_start() looks back over; a longer window_ms is treated as this.
  static constexpr int64_t kMaxWindowMs = int64_t{7} * 24 * 60 * 60 * 1000;
  // How far ahead next_start() looks.
  static constexpr int64_t kMaxLookaheadDays = 366;

  // The schedule `text` describes, or InvalidArgument with a one-line message naming the field
  // and the reason, e.g. "cron '0 25 * * *': hour 25 is outside 0-23". Refuses a field count
  // other than 5, empty list items, out-of-range numbers, numbers of more than 2 digits, step 0,
  // a range "a-b" with a > b, any other character, and text longer than kMaxTextLength. An
  // expression that can never match (e.g. "0 0 31 2 *") is accepted; next_start() says so.
  static Result<CronSchedule> parse(std::string_view text);

  // Whether the minute that starts at `unix_minute` (Unix seconds / 60, UTC) matches.
  bool matches(int64_t unix_minute) const;

  // The start (Unix ms) of the window that is active at `now_ms`, where a window of length
  // `window_ms` begins at the start of every matching minute. A window beginning at `start` is
  // active iff start <= now_ms < start + window_ms; so this is the latest matching minute start
  // in (now_ms - window_ms, now_ms], or nullopt when there is none. E.g. "0 1 * * *" with a
  // 4-hour window is active from 01:00:00.000 up to but not including 05:00:00.000.
  // window_ms <= 0 gives nullopt; window_ms above kMaxWindowMs is treated as kMaxWindowMs.
  // Cheap enough to call every second (skips days and hours that cannot match).
  std::optional<int64_t> window_start(int64_t now_ms, int64_t window_ms) const;

  // The first matching minute start (Unix ms) strictly after `now_ms`, looking at most
  // kMaxLookaheadDays ahead; nullopt when there is none in that span (e.g. "0 0 31 2 *").
  std::optional<int64_t> next_start(int64_t now_ms) const;

  // The text parse() was given.
  const std::string& text() const { return text_; }

 private:
  CronSchedule() = default;

  // Whether the UTC day `unix_day` (days since 1970-01-01) matches the month, day-of-month and
  // day-of-week fields.
  bool day_matches(int64_t unix_day) const;

  std::string text_;
  uint64_t minutes_ = 0;        // bit m: minute m (0-59)
  uint64_t hours_ = 0;          // bit h: hour h (0-23)
  uint64_t days_ = 0;           // bit d: day of month d (1-31)
  uint64_t months_ = 0;         // bit m: month m (1-12)
  uint64_t weekdays_ = 0;       // bit w: day of week w (0-6, Sunday 0; 7 is stored as 0)
  bool days_star_ = false;      // day of month begins with '*'
  bool weekdays_star_ = false;  // day of week begins with '*'
};

}  // namespace cellserve::fleet
