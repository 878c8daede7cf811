#include "engine/runtime/thread_governor.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>

namespace cellserve::engine {
namespace {

std::optional<SchedTimes> read_file(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[128];  // three decimal numbers
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  if (n <= 0) return std::nullopt;
  return parse_sched_times(std::string_view(buf, static_cast<size_t>(n)));
}

bool take_number(std::string_view& text, uint64_t& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  if (ec != std::errc() || ptr == text.data()) return false;
  text.remove_prefix(static_cast<size_t>(ptr - text.data()));
  return true;
}

}  // namespace

std::optional<SchedTimes> parse_sched_times(std::string_view text) {
  SchedTimes t;
  if (!take_number(text, t.run_ns) || text.empty() || text.front() != ' ') return std::nullopt;
  text.remove_prefix(1);
  if (!take_number(text, t.wait_ns)) return std::nullopt;
  return t;
}

std::optional<SchedTimes> read_sched_times(pid_t tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
  return read_file(path.c_str());
}

std::optional<SchedTimes> read_own_sched_times() { return read_file("/proc/thread-self/schedstat"); }

ThreadGovernor::ThreadGovernor(int max_threads, Options options)
    : max_threads_(std::max(1, max_threads)),
      options_(options),
      threads_(max_threads_),
      retry_after_(options.first_retry) {}

int ThreadGovernor::update(std::span<const SchedTimes> used, Clock::duration length, Clock::time_point now) {
  const auto length_ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(length).count());
  double busy = 0.0;
  double worst_wait_share = 0.0;
  for (const SchedTimes& t : used) {
    const auto total = static_cast<double>(t.run_ns + t.wait_ns);
    busy += total;
    if (total > 0.0) worst_wait_share = std::max(worst_wait_share, static_cast<double>(t.wait_ns) / total);
  }
  if (used.empty() || length_ns <= 0.0 || busy < options_.min_busy * length_ns * static_cast<double>(used.size())) {
    return threads_;  // mostly idle: nothing learnt about the cores
  }
  if (worst_wait_share > options_.shed_above && threads_ > 1) {
    // A try that brought the wait back waits twice as long before the next one.
    retry_after_ = trying_ ? std::min(retry_after_ * 2, options_.longest_retry) : options_.first_retry;
    trying_ = false;
    --threads_;
    retry_at_ = now + retry_after_;
    return threads_;
  }
  if (trying_) {
    trying_ = false;  // the extra thread got its CPU
    retry_after_ = options_.first_retry;
  }
  if (threads_ < max_threads_ && now >= retry_at_) {
    ++threads_;
    trying_ = true;
    retry_at_ = now + retry_after_;
  }
  return threads_;
}

}  // namespace cellserve::engine
