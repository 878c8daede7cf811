// Locating ../shared/testdata from tests. Tests that need it skip (never fail) when it is absent:
//   CS_REQUIRE_TESTDATA();
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cellserve::testing {

// The testdata folder: $CELLSERVE_TESTDATA if set, else the path configured at build time.
// Empty when neither exists.
inline std::filesystem::path testdata_dir() {
  if (const char* env = std::getenv("CELLSERVE_TESTDATA"); env != nullptr && *env != 0) {
    return std::filesystem::exists(env) ? std::filesystem::path(env) : std::filesystem::path();
  }
#ifdef CELLSERVE_TESTDATA_DIR
  std::filesystem::path p(CELLSERVE_TESTDATA_DIR);
  if (std::filesystem::exists(p / "models")) return p;
#endif
  return {};
}

inline std::string testdata_path(const std::string& relative) { return (testdata_dir() / relative).string(); }

}  // namespace cellserve::testing

#define CS_REQUIRE_TESTDATA()                                                                           \
  do {                                                                                                  \
    if (::cellserve::testing::testdata_dir().empty())                                                   \
      GTEST_SKIP() << "shared/testdata not found (set CELLSERVE_TESTDATA or place it beside the repo)"; \
  } while (0)
