// cs_test_keystore: plays a phone's keystore for end-to-end tests of attested registration.
//
//   cs_test_keystore init DIR
//       writes DIR/root.pem (the root to give the hub as --attestation-roots),
//       DIR/intermediate.pem and DIR/intermediate.key (mode 0600).
//   cs_test_keystore attest DIR CHALLENGE_HEX [--unlocked] [--software] [--patch YYYYMM]
//       prints {"chain": [...], "signature": "..."} for a fresh EC P-256 key whose attestation
//       extension carries CHALLENGE_HEX (64 hex digits) and which signed it.
//
// Flags and the challenge may come in any order, so "cs_test_keystore attest DIR --unlocked"
// works as an agent's --attestation-command (which appends the challenge). Bad input: one line
// on stderr, exit status 2. Never real device data.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "attestation_fixture.h"

namespace {

using namespace cellserve::fleet::attest;
using namespace cellserve::fleet::attest::testing;

int fail(const std::string& message) {
  std::cerr << "cs_test_keystore: " << message << "\n";
  return 2;
}

// Writes `text` to `path`, created with `mode` (so a key is never readable by others, even
// briefly).
bool write_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  const bool ok = ::fchmod(fd, mode) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

bool read_file(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

bool from_hex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned int byte = 0;
    if (std::sscanf(hex.substr(i, 2).c_str(), "%2x", &byte) != 1 ||
        !std::isxdigit(static_cast<unsigned char>(hex[i])) || !std::isxdigit(static_cast<unsigned char>(hex[i + 1]))) {
      return false;
    }
    out->push_back(static_cast<char>(byte));
  }
  return true;
}

// From `back` seconds ago to `ahead` seconds from now.
Validity around_now(std::time_t back, std::time_t ahead) {
  const std::time_t now = std::time(nullptr);
  return Validity{now - back, now + ahead};
}

int init(const std::string& dir) {
  ::mkdir(dir.c_str(), 0700);  // may exist already; writing the files tells
  const Authority root = make_root("cellserve test keystore root", 1, around_now(3600, 3650 * kDay));
  const Authority intermediate =
      make_intermediate(root, "cellserve test keystore intermediate", 2, around_now(3600, 3650 * kDay));
  if (!write_file(dir + "/root.pem", pem_of(root.cert.get()), 0644) ||
      !write_file(dir + "/intermediate.pem", pem_of(intermediate.cert.get()), 0644) ||
      !write_file(dir + "/intermediate.key", pem_of_key(intermediate.key.get()), 0600)) {
    return fail(dir + ": cannot write the keystore files");
  }
  return 0;
}

int attest(const std::string& dir, const std::vector<std::string>& args) {
  LeafSpec spec;
  spec.validity = around_now(3600, 365 * kDay);
  std::string challenge_hex;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--unlocked") {
      spec.description.device_locked = false;
    } else if (args[i] == "--software") {
      spec.description.attestation_level = SecurityLevel::Software;
      spec.description.keymint_level = SecurityLevel::Software;
    } else if (args[i] == "--patch" && i + 1 < args.size()) {
      const std::string& v = args[++i];
      if (v.size() != 6 || v.find_first_not_of("0123456789") != std::string::npos) {
        return fail("--patch wants YYYYMM, got \"" + v + "\"");
      }
      spec.description.os_patch_level = std::stoi(v);
    } else if (!args[i].starts_with("--") && challenge_hex.empty()) {
      challenge_hex = args[i];
    } else {
      return fail("unexpected argument \"" + args[i] + "\"");
    }
  }
  if (challenge_hex.size() != 64 || !from_hex(challenge_hex, &spec.description.challenge)) {
    return fail("the challenge must be 64 hex digits");
  }
  std::string root_pem, cert_pem, key_pem;
  if (!read_file(dir + "/root.pem", &root_pem) || !read_file(dir + "/intermediate.pem", &cert_pem) ||
      !read_file(dir + "/intermediate.key", &key_pem)) {
    return fail(dir + ": no keystore here (run \"cs_test_keystore init " + dir + "\")");
  }
  auto root = certificate_from_pem(root_pem);
  auto cert = certificate_from_pem(cert_pem);
  auto key = key_from_pem(key_pem);
  if (!root.ok() || !cert.ok() || !key.ok()) return fail(dir + ": the keystore files do not parse");
  const TestKeystore keystore(Authority{std::move(root).value(), nullptr},
                              Authority{std::move(cert).value(), std::move(key).value()});
  std::cout << boost::json::serialize(to_json(keystore.attest(spec))) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "init") return init(args[1]);
  if (args.size() >= 3 && args[0] == "attest") return attest(args[1], {args.begin() + 2, args.end()});
  return fail("usage: cs_test_keystore init DIR | attest DIR [--unlocked] [--software] [--patch YYYYMM] CHALLENGE_HEX");
}
