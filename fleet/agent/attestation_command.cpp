#include "fleet/agent/attestation_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <boost/json.hpp>

#include "fleet/attest/base64.h"
#include "fleet/attest/evidence.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// Kills and reaps the child unless it was reaped already.
struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<json::value> run_attestation_command(const std::string& command, const std::string& challenge_hex,
                                            std::chrono::milliseconds deadline) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::internal("attestation command: no pipe");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status::internal("attestation command: no pipe");
  }
  Fd out{out_pipe[0]};
  Fd err{err_pipe[0]};
  // The challenge is the shell's $1, never part of the command text.
  const std::string script = command + " \"$1\"";
  Child child;
  child.pid = ::fork();
  if (child.pid < 0) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    return Status::internal("attestation command: cannot fork");
  }
  if (child.pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), "sh", challenge_hex.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  std::string stdout_text;
  std::string stderr_text;
  const auto end = Clock::now() + deadline;
  bool out_open = true;
  bool err_open = true;
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) {
      return Status::unavailable("attestation command: no answer within " + std::to_string(deadline.count() / 1000) +
                                 " s (killed)");
    }
    pollfd fds[2] = {{out_open ? out.fd : -1, POLLIN, 0}, {err_open ? err.fd : -1, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000))) < 0 && errno != EINTR) {
      return Status::internal("attestation command: poll failed");
    }
    char buf[16384];
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(out.fd, buf, sizeof(buf));
      if (n <= 0) out_open = false;
      if (n > 0) stdout_text.append(buf, static_cast<size_t>(n));
      if (stdout_text.size() > kMaxAttestationOutput) {
        return Status::invalid_argument("attestation command: more than " +
                                        std::to_string(kMaxAttestationOutput / 1024) + " KiB on stdout");
      }
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(err.fd, buf, sizeof(buf));
      if (n <= 0) err_open = false;
      if (n > 0 && stderr_text.size() < 4096) stderr_text.append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  // Both pipes closed: the child has exited or is about to; wait for it within the deadline.
  while (true) {
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) break;
    if (Clock::now() >= end) {
      return Status::unavailable("attestation command: did not exit within the deadline (killed)");
    }
    ::usleep(10000);
  }
  child.pid = -1;  // reaped
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string first_line = stderr_text.substr(0, std::min(stderr_text.find('\n'), size_t{200}));
    return Status::unavailable(
        "attestation command: " +
        (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : std::string("killed by a signal")) +
        (first_line.empty() ? "" : ": " + first_line));
  }
  boost::system::error_code ec;
  json::value v = json::parse(stdout_text, ec);
  if (ec || !v.is_object()) return Status::invalid_argument("attestation command: stdout is not a JSON object");
  return v;
}

Result<std::string> sign_with_attested_key(const std::string& command, std::string_view digest,
                                           std::chrono::milliseconds deadline) {
  CS_ASSIGN_OR_RETURN(
      json::value v,
      run_attestation_command(command + " sign",
                              to_hex(reinterpret_cast<const unsigned char*>(digest.data()), digest.size()), deadline));
  const json::value* signature = v.as_object().if_contains("signature");
  if (signature == nullptr || !signature->is_string()) {
    return Status::invalid_argument("attestation command: sign printed no \"signature\" string");
  }
  std::string text(signature->as_string());
  const std::optional<std::string> der = attest::base64_decode(text);
  if (!der || der->empty() || der->size() > attest::kMaxEvidenceSignatureBytes) {
    return Status::invalid_argument(
        "attestation command: sign printed a signature that is not base64 of 1..1024 bytes");
  }
  return text;
}

Result<std::string> ecdh_with_attested_key(const std::string& command, std::string_view peer_spki_der,
                                           std::chrono::milliseconds deadline) {
  CS_ASSIGN_OR_RETURN(
      json::value v,
      run_attestation_command(
          command + " ecdh", to_hex(reinterpret_cast<const unsigned char*>(peer_spki_der.data()), peer_spki_der.size()),
          deadline));
  const json::value* shared = v.as_object().if_contains("shared");
  std::optional<std::string> bytes;
  if (shared != nullptr && shared->is_string()) bytes = attest::base64_decode(shared->as_string());
  if (!bytes || bytes->empty() || bytes->size() > 128) {
    return Status::invalid_argument("attestation command: ecdh printed no \"shared\" secret in base64");
  }
  return *bytes;
}

Result<std::string> key_creation_nonce(const std::string& path, const json::value& evidence,
                                       const std::string& nonce_hex) {
  const json::value* chain = evidence.is_object() ? evidence.as_object().if_contains("chain") : nullptr;
  if (chain == nullptr || !chain->is_array() || chain->as_array().empty() || !chain->as_array()[0].is_string()) {
    return Status::invalid_argument("attestation command: no leaf certificate in its evidence");
  }
  const std::string leaf = sha256_hex(chain->as_array()[0].as_string());
  {
    std::ifstream in(path);
    std::string text(4096, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    boost::system::error_code ec;
    const json::value kept = json::parse(text, ec);
    if (!ec && kept.is_object() && kept.as_object().contains("leaf") && kept.as_object().contains("nonce") &&
        kept.at("leaf") == json::value(leaf) && kept.at("nonce").is_string()) {
      return std::string(kept.at("nonce").as_string());
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json::serialize(json::object{{"leaf", leaf}, {"nonce", nonce_hex}});
    if (!out.flush()) return Status::internal(tmp + ": cannot write");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::internal(path + ": cannot write");
  return nonce_hex;
}

}  // namespace cellserve::fleet
