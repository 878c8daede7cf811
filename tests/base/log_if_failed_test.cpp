// log_if_failed(): a Status its caller cannot return is logged once with its context, or not at
// all when it is OK.
#include "base/log_if_failed.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cellserve {
namespace {

TEST(LogIfFailed, AnOkStatusLogsNothing) {
  std::vector<std::string> lines;
  EXPECT_TRUE(log_if_failed(Status(), "batch b1", [&](const std::string& l) { lines.push_back(l); }));
  EXPECT_TRUE(lines.empty());
}

TEST(LogIfFailed, AFailureIsLoggedOnceWithItsContext) {
  std::vector<std::string> lines;
  EXPECT_FALSE(log_if_failed(Status::internal("sqlite: disk I/O error"), "batch b1: failing its pending lines",
                             [&](const std::string& l) { lines.push_back(l); }));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "batch b1: failing its pending lines: internal: sqlite: disk I/O error");
}

TEST(LogIfFailed, WithoutALogTheFailureGoesToStderr) {
  testing::internal::CaptureStderr();
  EXPECT_FALSE(log_if_failed(Status::data_loss("torn page"), "hub.db"));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "hub.db: data_loss: torn page\n");
}

}  // namespace
}  // namespace cellserve
