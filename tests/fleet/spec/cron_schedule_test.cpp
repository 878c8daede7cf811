#include "fleet/spec/cron_schedule.h"

#include <gtest/gtest.h>

#include <ctime>
#include <random>
#include <string>

namespace cellserve::fleet {
namespace {

// 2026-12-07T00:00:00Z, a Monday (`date -u -d @1796601600`).
constexpr int64_t kMonday = 1796601600;
constexpr int64_t kDay = 86400;

// Unix ms of kMonday + `day` days, at h:m:s.ms UTC.
int64_t at(int64_t day, int h, int m, int s = 0, int ms = 0) {
  return (kMonday + day * kDay + h * 3600 + m * 60 + s) * 1000 + ms;
}
// The Unix minute of kMonday + `day` days, at h:m UTC.
int64_t minute_at(int64_t day, int h, int m) { return at(day, h, m) / 60000; }

CronSchedule parse_ok(std::string_view text) {
  auto s = CronSchedule::parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().message();
  return std::move(s).value();
}

// Minute by minute, for checking the skipping searches.
std::optional<int64_t> naive_window_start(const CronSchedule& s, int64_t now_ms, int64_t window_ms) {
  for (int64_t m = now_ms / 60000; m * 60000 > now_ms - window_ms; --m) {
    if (s.matches(m)) return m * 60000;
  }
  return std::nullopt;
}
std::optional<int64_t> naive_next_start(const CronSchedule& s, int64_t now_ms) {
  for (int64_t m = now_ms / 60000 + 1; m * 60000 <= now_ms + CronSchedule::kMaxLookaheadDays * kDay * 1000; ++m) {
    if (s.matches(m)) return m * 60000;
  }
  return std::nullopt;
}

TEST(CronSchedule, DailyAtOneMatchesOnlyOneUtc) {
  const CronSchedule s = parse_ok("0 1 * * *");
  EXPECT_EQ(s.text(), "0 1 * * *");
  EXPECT_TRUE(s.matches(minute_at(0, 1, 0)));
  EXPECT_TRUE(s.matches(minute_at(1, 1, 0)));
  EXPECT_TRUE(s.matches(minute_at(-400, 1, 0)));
  EXPECT_FALSE(s.matches(minute_at(0, 1, 1)));
  EXPECT_FALSE(s.matches(minute_at(0, 0, 59)));
  EXPECT_FALSE(s.matches(minute_at(0, 13, 0)));
  int count = 0;
  for (int64_t m = minute_at(0, 0, 0); m < minute_at(1, 0, 0); ++m) count += s.matches(m) ? 1 : 0;
  EXPECT_EQ(count, 1);
}

TEST(CronSchedule, WindowIsActiveFromStartUpToButNotIncludingItsEnd) {
  const CronSchedule s = parse_ok("0 1 * * *");
  constexpr int64_t kFourHours = 4 * 3600 * 1000;
  EXPECT_EQ(s.window_start(at(0, 2, 30), kFourHours), at(0, 1, 0));
  EXPECT_EQ(s.window_start(at(0, 1, 0), kFourHours), at(0, 1, 0));  // start <= now
  EXPECT_EQ(s.window_start(at(0, 1, 0, 0, 1), kFourHours), at(0, 1, 0));
  EXPECT_EQ(s.window_start(at(0, 4, 59, 59, 999), kFourHours), at(0, 1, 0));
  EXPECT_EQ(s.window_start(at(0, 5, 0), kFourHours), std::nullopt);  // now < start + window fails
  EXPECT_EQ(s.window_start(at(0, 0, 59, 59, 999), kFourHours), std::nullopt);
  EXPECT_EQ(s.window_start(at(0, 12, 0), kFourHours), std::nullopt);
  EXPECT_EQ(s.window_start(at(1, 3, 0), kFourHours), at(1, 1, 0));
  // A 24-hour window is always active, begun at the latest 01:00.
  constexpr int64_t kOneDay = kDay * 1000;
  EXPECT_EQ(s.window_start(at(1, 0, 59), kOneDay), at(0, 1, 0));
  EXPECT_EQ(s.window_start(at(1, 1, 0), kOneDay), at(1, 1, 0));
}

TEST(CronSchedule, WindowOfOneMinuteOrLessCoversOnlyItsMinute) {
  const CronSchedule s = parse_ok("30 * * * *");
  EXPECT_EQ(s.window_start(at(0, 7, 30, 59, 999), 60000), at(0, 7, 30));
  EXPECT_EQ(s.window_start(at(0, 7, 31), 60000), std::nullopt);
  EXPECT_EQ(s.window_start(at(0, 7, 30, 0, 999), 1000), at(0, 7, 30));
  EXPECT_EQ(s.window_start(at(0, 7, 30, 1), 1000), std::nullopt);
  EXPECT_EQ(s.window_start(at(0, 7, 30), 0), std::nullopt);
  EXPECT_EQ(s.window_start(at(0, 7, 30), -5), std::nullopt);
}

TEST(CronSchedule, WindowLongerThanSevenDaysIsCapped) {
  const CronSchedule s = parse_ok("0 0 1 12 *");  // 2026-12-01, six days before kMonday
  EXPECT_EQ(s.window_start(at(0, 0, 0), CronSchedule::kMaxWindowMs), at(-6, 0, 0));
  EXPECT_EQ(s.window_start(at(7, 0, 0), CronSchedule::kMaxWindowMs), std::nullopt);
  EXPECT_EQ(s.window_start(at(7, 0, 0), 30 * kDay * 1000), std::nullopt);
}

TEST(CronSchedule, QuarterHoursInWorkingHoursOnWeekdays) {
  const CronSchedule s = parse_ok("*/15 9-17 * * 1-5");
  EXPECT_TRUE(s.matches(minute_at(0, 9, 0)));
  EXPECT_TRUE(s.matches(minute_at(0, 9, 15)));
  EXPECT_TRUE(s.matches(minute_at(0, 17, 45)));
  EXPECT_TRUE(s.matches(minute_at(4, 12, 30)));  // Friday
  EXPECT_FALSE(s.matches(minute_at(0, 9, 10)));
  EXPECT_FALSE(s.matches(minute_at(0, 8, 45)));
  EXPECT_FALSE(s.matches(minute_at(0, 18, 0)));
  EXPECT_FALSE(s.matches(minute_at(5, 12, 0)));  // Saturday
  EXPECT_FALSE(s.matches(minute_at(6, 12, 0)));  // Sunday
  int count = 0;
  for (int64_t m = minute_at(0, 0, 0); m < minute_at(7, 0, 0); ++m) count += s.matches(m) ? 1 : 0;
  EXPECT_EQ(count, 5 * 9 * 4);

  constexpr int64_t kHour = 3600 * 1000;
  EXPECT_EQ(s.window_start(at(0, 10, 20), kHour), at(0, 10, 15));  // the latest start
  EXPECT_EQ(s.window_start(at(0, 18, 44, 59, 999), kHour), at(0, 17, 45));
  EXPECT_EQ(s.window_start(at(0, 18, 45), kHour), std::nullopt);
  EXPECT_EQ(s.window_start(at(5, 10, 0), kHour), std::nullopt);  // Saturday
  EXPECT_EQ(s.window_start(at(5, 10, 0), 2 * kDay * 1000), at(4, 17, 45));
}

TEST(CronSchedule, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // 2026-12-01 is a Tuesday (day -6), 2026-12-07 a Monday (day 0), 2026-12-14 a Monday (day 7).
  const CronSchedule either = parse_ok("0 12 1 * 1");
  EXPECT_TRUE(either.matches(minute_at(-6, 12, 0)));  // the 1st, a Tuesday
  EXPECT_TRUE(either.matches(minute_at(0, 12, 0)));   // a Monday, the 7th
  EXPECT_FALSE(either.matches(minute_at(1, 12, 0)));  // Tuesday the 8th
  EXPECT_FALSE(parse_ok("0 12 1 * *").matches(minute_at(0, 12, 0)));
  EXPECT_FALSE(parse_ok("0 12 * * 1").matches(minute_at(-6, 12, 0)));
  // A field beginning with '*' is unrestricted (Vixie), so both must match: odd days that are Mondays.
  const CronSchedule both = parse_ok("0 12 */2 * 1");
  EXPECT_TRUE(both.matches(minute_at(0, 12, 0)));    // Monday the 7th
  EXPECT_FALSE(both.matches(minute_at(7, 12, 0)));   // Monday the 14th
  EXPECT_FALSE(both.matches(minute_at(-6, 12, 0)));  // Tuesday the 1st
  const CronSchedule weekday_star = parse_ok("0 12 7 * */1");
  EXPECT_TRUE(weekday_star.matches(minute_at(0, 12, 0)));
  EXPECT_FALSE(weekday_star.matches(minute_at(7, 12, 0)));
}

TEST(CronSchedule, SevenAndZeroAreSunday) {
  const int64_t sunday = minute_at(6, 0, 0);  // 2026-12-13
  for (const char* text : {"0 0 * * 0", "0 0 * * 7", "0 0 * * 6-7", "0 0 * * 5,7", "0 0 * * 7-7"}) {
    const CronSchedule s = parse_ok(text);
    EXPECT_TRUE(s.matches(sunday)) << text;
    EXPECT_FALSE(s.matches(minute_at(0, 0, 0))) << text;  // Monday
  }
  const CronSchedule weekend = parse_ok("0 0 * * 5-7");
  EXPECT_TRUE(weekend.matches(minute_at(4, 0, 0)));
  EXPECT_TRUE(weekend.matches(minute_at(5, 0, 0)));
  EXPECT_TRUE(weekend.matches(sunday));
  EXPECT_FALSE(weekend.matches(minute_at(3, 0, 0)));
  const CronSchedule every = parse_ok("0 0 * * 0-7");
  for (int d = 0; d < 7; ++d) EXPECT_TRUE(every.matches(minute_at(d, 0, 0))) << d;
}

TEST(CronSchedule, ListsRangesAndSteps) {
  const CronSchedule s = parse_ok("5,10-20/5,58-59 0 * * *");
  for (int m = 0; m < 60; ++m) {
    const bool want = m == 5 || m == 10 || m == 15 || m == 20 || m == 58 || m == 59;
    EXPECT_EQ(s.matches(minute_at(0, 0, m)), want) << m;
  }
  const CronSchedule months = parse_ok("0 0 1 */5 *");  // January, June, November
  EXPECT_FALSE(months.matches(minute_at(-6, 0, 0)));    // 2026-12-01
  EXPECT_TRUE(months.matches(1798761600 / 60));         // 2027-01-01
  EXPECT_TRUE(parse_ok("00 00 01 01 *").matches(1798761600 / 60));
  EXPECT_TRUE(parse_ok("\t0  0 1\t1 *  ").matches(1798761600 / 60));
  EXPECT_TRUE(parse_ok("* * * * */99").matches(minute_at(6, 3, 3)));  // a step past the range: its start only
  EXPECT_FALSE(parse_ok("* * * * */99").matches(minute_at(0, 3, 3)));
}

TEST(CronSchedule, NextStartIsStrictlyAfterNow) {
  const CronSchedule s = parse_ok("0 1 * * *");
  EXPECT_EQ(s.next_start(at(0, 0, 0)), at(0, 1, 0));
  EXPECT_EQ(s.next_start(at(0, 0, 59, 59, 999)), at(0, 1, 0));
  EXPECT_EQ(s.next_start(at(0, 1, 0)), at(1, 1, 0));
  EXPECT_EQ(s.next_start(at(0, 1, 0, 0, 1)), at(1, 1, 0));
  const CronSchedule work = parse_ok("*/15 9-17 * * 1-5");
  EXPECT_EQ(work.next_start(at(0, 9, 1)), at(0, 9, 15));
  EXPECT_EQ(work.next_start(at(0, 17, 45)), at(1, 9, 0));
  EXPECT_EQ(work.next_start(at(4, 17, 50)), at(7, 9, 0));  // Friday evening to Monday
  EXPECT_EQ(parse_ok("30 2 1 1 *").next_start(at(0, 0, 0)), (1798761600 + 2 * 3600 + 30 * 60) * int64_t{1000});
}

TEST(CronSchedule, NextStartLooksAtMost366DaysAhead) {
  const CronSchedule leap = parse_ok("0 0 29 2 *");
  EXPECT_EQ(leap.next_start(int64_t{1803859200} * 1000), int64_t{1835395200} * 1000);  // 2027-03-01 -> 2028-02-29
  EXPECT_EQ(leap.next_start(int64_t{1772323200} * 1000), std::nullopt);                // 2026-03-01: 730 days away
}

TEST(CronSchedule, ImpossibleDateNeverMatches) {
  for (const char* text : {"0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"}) {
    const CronSchedule s = parse_ok(text);
    EXPECT_EQ(s.next_start(at(0, 0, 0)), std::nullopt) << text;
    EXPECT_EQ(s.window_start(at(0, 0, 0), CronSchedule::kMaxWindowMs), std::nullopt) << text;
  }
  // With a day of week too, either day rule matches: the first Monday in February, 2027-02-01.
  EXPECT_EQ(parse_ok("0 0 31 2 1").next_start(at(0, 0, 0)), int64_t{1801440000} * 1000);
}

TEST(CronSchedule, SearchesAgreeWithMinuteByMinute) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> when(at(-800, 0, 0), at(800, 0, 0));
  std::uniform_int_distribution<int64_t> window(1, CronSchedule::kMaxWindowMs);
  for (const char* text : {"0 1 * * *", "*/15 9-17 * * 1-5", "0 12 1 * 1", "59 23 31 12 *", "7,8 3-4/1 */3 * 0,6",
                           "* * * * *", "0 0 1 3 *"}) {
    const CronSchedule s = parse_ok(text);
    for (int i = 0; i < 40; ++i) {
      const int64_t now = when(rng);
      const int64_t w = i % 4 == 0 ? CronSchedule::kMaxWindowMs : window(rng);
      EXPECT_EQ(s.window_start(now, w), naive_window_start(s, now, w)) << text << " now " << now << " window " << w;
      if (i % 8 == 0) {
        EXPECT_EQ(s.next_start(now), naive_next_start(s, now)) << text << " now " << now;
      }
    }
  }
}

TEST(CronSchedule, CalendarAgreesWithGmtime) {
  std::mt19937_64 rng(11);
  // 1901 to 2200, before and after the epoch.
  std::uniform_int_distribution<int64_t> minute(int64_t{-2145916800} / 60, int64_t{7258118400} / 60);
  for (int i = 0; i < 3000; ++i) {
    const int64_t m = minute(rng);
    const time_t t = static_cast<time_t>(m * 60);
    struct tm tm {};
    ASSERT_NE(gmtime_r(&t, &tm), nullptr);
    const std::string date = std::to_string(tm.tm_min) + " " + std::to_string(tm.tm_hour) + " " +
                             std::to_string(tm.tm_mday) + " " + std::to_string(tm.tm_mon + 1);
    EXPECT_TRUE(parse_ok(date + " *").matches(m)) << date << " at " << m;
    EXPECT_TRUE(
        parse_ok(std::to_string(tm.tm_min) + " " + std::to_string(tm.tm_hour) + " * * " + std::to_string(tm.tm_wday))
            .matches(m))
        << m;
    EXPECT_FALSE(parse_ok(std::to_string((tm.tm_min + 1) % 60) + " * * * *").matches(m)) << m;
    EXPECT_FALSE(parse_ok("* * * * " + std::to_string((tm.tm_wday + 1) % 7)).matches(m)) << m;
    EXPECT_FALSE(parse_ok("* * * " + std::to_string((tm.tm_mon + 1) % 12 + 1) + " *").matches(m)) << m;
  }
}

TEST(CronSchedule, NamesTheFieldAndTheReason) {
  auto s = CronSchedule::parse("0 25 * * *");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.status().message(), "cron '0 25 * * *': hour 25 is outside 0-23");
}

TEST(CronSchedule, RefusesMalformedText) {
  const std::string too_long = "0 0 * * *" + std::string(192, ' ');
  ASSERT_EQ(too_long.size(), 201u);
  const std::string longest = "0 0 * * *" + std::string(191, ' ');
  EXPECT_TRUE(CronSchedule::parse(longest).ok());
  struct Case {
    std::string text;
    const char* message;  // a part of the message
  };
  const Case cases[] = {
      {"", "expected 5 fields (minute hour day-of-month month day-of-week), got 0"},
      {"   ", "got 0"},
      {"0 * * *", "got 4"},
      {"0 * * * * *", "got 6"},
      {"1,,2 * * * *", "minute '1,,2' has an empty list item"},
      {",1 * * * *", "has an empty list item"},
      {"* * * * 1,", "day-of-week '1,' has an empty list item"},
      {"60 * * * *", "minute 60 is outside 0-59"},
      {"* 24 * * *", "hour 24 is outside 0-23"},
      {"* * 0 * *", "day-of-month 0 is outside 1-31"},
      {"* * 32 * *", "day-of-month 32 is outside 1-31"},
      {"* * * 0 *", "month 0 is outside 1-12"},
      {"* * * 13 *", "month 13 is outside 1-12"},
      {"* * * * 8", "day-of-week 8 is outside 0-7"},
      {"0-60 * * * *", "minute 60 is outside 0-59"},
      {"*/0 * * * *", "minute '*/0': step 0 is not allowed"},
      {"* 1-5/0 * * *", "hour '1-5/0': step 0 is not allowed"},
      {"5-3 * * * *", "minute range 5-3 runs backwards"},
      {"* * * 12-1 *", "month range 12-1 runs backwards"},
      {"5x * * * *", "minute '5x': unexpected 'x'"},
      {"1-2-3 * * * *", "minute '1-2-3': unexpected '-'"},
      {"** * * * *", "unexpected '*'"},
      {"*-3 * * * *", "minute '*-3': unexpected '-'"},
      {"5- * * * *", "minute '5-': expected a number after '-' at the end"},
      {"*/ * * * *", "expected a number after '/' at the end"},
      {"*/x * * * *", "expected a number after '/', not 'x'"},
      {"5/2 * * * *", "minute '5/2': a step needs '*' or a range before it"},
      {"-1 * * * *", "minute '-1': expected a number or '*', not '-'"},
      {"* * * * MON", "day-of-week 'MON': expected a number or '*', not 'M'"},
      {"0 0 * JAN *", "month 'JAN'"},
      {"@daily", "got 1"},
      {"0 0 ? * *", "day-of-month '?'"},
      {"100 * * * *", "minute number 100 has more than 2 digits"},
      {"007 * * * *", "minute number 007 has more than 2 digits"},
      {"99999999999999999999 * * * *", "has more than 2 digits"},
      {"0-99999999999999999999 * * * *", "has more than 2 digits"},
      {"*/100 * * * *", "minute number 100 has more than 2 digits"},
      {too_long, "cron text is 201 characters, more than 200"},
      {"0 0 * * *\n", "control or non-ASCII character at offset 9"},
      {"0\n0 * * *", "control or non-ASCII character at offset 1"},
      {"0 0 * * \xc3\xa9", "control or non-ASCII character at offset 8"},
      {std::string("0 0 * * *\0", 10), "control or non-ASCII character at offset 9"},
  };
  for (const Case& c : cases) {
    auto s = CronSchedule::parse(c.text);
    ASSERT_FALSE(s.ok()) << "'" << c.text << "'";
    EXPECT_EQ(s.status().code(), StatusCode::InvalidArgument) << c.text;
    EXPECT_NE(s.status().message().find(c.message), std::string::npos)
        << "'" << c.text << "' gave: " << s.status().message();
    EXPECT_EQ(s.status().message().find('\n'), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace cellserve::fleet
