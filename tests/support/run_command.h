// Runs a shell command and captures its standard output and exit status (for CLI tests).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace cellserve::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout (stderr too when the command redirects it with 2>&1)
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The command prefix that runs the cellserve binary: the emulator when cross-compiled (qemu).
inline std::string cellserve_command() {
  std::string launcher = CELLSERVE_LAUNCHER;
  return (launcher.empty() ? "" : launcher + " ") + CELLSERVE_BINARY;
}

}  // namespace cellserve::testing
