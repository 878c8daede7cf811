#include "base/log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cellserve {
namespace {

// A pipe, both ends closed at the end.
struct Pipe {
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  // Everything the write end will ever carry, once it is closed.
  std::string read_all() {
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  int fds[2] = {-1, -1};
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(text.substr(start, nl - start));
  }
  EXPECT_EQ(start, text.size()) << "a line was cut";
  return lines;
}

TEST(LogSink, WritesEveryLineInOrderWhenTheReaderKeepsUp) {
  Pipe p;
  std::string read;
  std::thread reader;
  {
    LogSink sink(p.fds[1]);
    reader = std::thread([&] { read = p.read_all(); });
    for (int i = 0; i < 1000; ++i) sink.write("line " + std::to_string(i));
  }
  ::close(p.fds[1]);
  p.fds[1] = -1;
  reader.join();
  const std::vector<std::string> lines = lines_of(read);
  ASSERT_EQ(lines.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(lines[static_cast<size_t>(i)], "line " + std::to_string(i));
}

// The failure this exists for: a process whose stderr pipe nobody reads. With a plain blocking
// write the caller would stop at the first line past the pipe's 64 KiB (this test would hang,
// and ctest would time it out); here every call returns, the overflow is counted, and once
// the reader comes back the log says how many lines were lost, with every kept line whole and
// in order.
TEST(LogSink, AReaderThatStopsCostsLinesNotTheCaller) {
  Pipe p;
  constexpr int kLines = 20000;  // 2 MB: far past the pipe's 64 KiB and the queue's
  const std::string pad(90, 'x');
  auto sink = std::make_unique<LogSink>(p.fds[1], 64 * 1024);
  for (int i = 0; i < kLines; ++i) sink->write(std::to_string(i) + " " + pad);
  const uint64_t dropped = sink->dropped();
  EXPECT_GT(dropped, 0u);
  // The reader comes back; the sink drains into it as it is destroyed, before the write end
  // closes.
  std::string read;
  std::thread reader([&] { read = p.read_all(); });
  sink.reset();
  ::close(p.fds[1]);
  p.fds[1] = -1;
  reader.join();
  uint64_t reported = 0;
  int last = -1;
  int kept = 0;
  for (const std::string& line : lines_of(read)) {
    if (line.starts_with("(")) {
      EXPECT_NE(line.find("log lines dropped"), std::string::npos) << line;
      reported += std::stoull(line.substr(1));
      continue;
    }
    const int n = std::stoi(line);
    EXPECT_GT(n, last) << "out of order";
    EXPECT_EQ(line, std::to_string(n) + " " + pad);
    last = n;
    ++kept;
  }
  EXPECT_EQ(reported, dropped);
  EXPECT_EQ(static_cast<uint64_t>(kept) + dropped, static_cast<uint64_t>(kLines));
}

// A reader that is gone for good (the pipe's read end closed) stops the writer; the callers
// still never block, and destroying the sink returns.
TEST(LogSink, AClosedReaderEndsTheWriterNotTheCaller) {
  Pipe p;
  ::close(p.fds[0]);
  p.fds[0] = -1;
  {
    LogSink sink(p.fds[1], 4096);
    for (int i = 0; i < 1000; ++i) sink.write("nobody reads line " + std::to_string(i));
  }
  SUCCEED();
}

}  // namespace
}  // namespace cellserve
