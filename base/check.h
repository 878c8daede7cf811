// CS_CHECK: invariants and programmer errors. Aborts with a message; never used to validate
// input (input errors return Status, see base/status.h).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace cellserve::detail {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": check failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::fprintf(stderr, "%s\n", stream_.str().c_str());
    std::abort();
  }
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

}  // namespace cellserve::detail

#define CS_CHECK(cond) \
  if (cond) {          \
  } else               \
    ::cellserve::detail::CheckFailure(__FILE__, __LINE__, #cond)
