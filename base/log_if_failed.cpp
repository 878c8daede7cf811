#include "base/log_if_failed.h"

#include <cstdio>

namespace cellserve {

bool log_if_failed(const Status& s, std::string_view context, const std::function<void(const std::string&)>& log) {
  if (s.ok()) return true;
  const std::string line = std::string(context) + ": " + s.to_string();
  if (log) {
    log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return false;
}

}  // namespace cellserve
