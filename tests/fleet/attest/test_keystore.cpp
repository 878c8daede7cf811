// cs_test_keystore: plays a phone's keystore for end-to-end tests of attested registration.
//
//   cs_test_keystore init DIR
//       writes DIR/root.pem (the root to give the hub as --attestation-roots),
//       DIR/intermediate.pem and DIR/intermediate.key (mode 0600).
//   cs_test_keystore attest DIR CHALLENGE_HEX [--unlocked] [--software] [--patch YYYYMM]
//       prints {"chain": [...], "signature": "..."} for a fresh EC P-256 key whose attestation
//       extension carries CHALLENGE_HEX (64 hex digits) and which signed it.
//
//   cs_test_keystore helper DIR [flags] CHALLENGE_HEX | sign DIGEST_HEX
//       the agent's keystore helper with one persistent attested key (DIR/device.*), as a phone's
//       app keeps one: CHALLENGE_HEX attests it (created, attested with that challenge, on the
//       first call; later calls print the same key's evidence, whose challenge is the first one);
//       "sign DIGEST_HEX" prints {"signature": "<base64 DER>"}, the key's SHA-256 ECDSA signature
//       of the 32 raw bytes; "ecdh PEER_SPKI_HEX" prints {"shared": "<base64>"}, the ECDH secret
//       of the key with that P-256 public key (docs/attestation.md, the helper contract).
//       --no-ecdh: a helper without the ecdh verb.
//
// Flags: --unlocked, --software, --patch YYYYMM, --app PACKAGE (the attestationApplicationId;
// default com.cellserve.agent signed by 32 bytes of 0x11). Flags and the challenge may come in
// any order, so "cs_test_keystore attest DIR --unlocked" works as an agent's
// --attestation-command (which appends the challenge). Bad input: one line on stderr, exit
// status 2. Never real device data.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "attestation_fixture.h"
#include "fleet/attest/attested_seal.h"
#include "fleet/attest/base64.h"

namespace {

using namespace cellserve::fleet::attest;

bool no_ecdh = false;  // --no-ecdh
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

// Reads the flags into `spec`; the one argument that is not a flag goes to `positional` (the
// challenge, or a helper verb and its argument). "" when all is well, else the complaint.
std::string parse_flags(const std::vector<std::string>& args, LeafSpec* spec, std::vector<std::string>* positional) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--unlocked") {
      spec->description.device_locked = false;
    } else if (args[i] == "--software") {
      spec->description.attestation_level = SecurityLevel::Software;
      spec->description.keymint_level = SecurityLevel::Software;
    } else if (args[i] == "--patch" && i + 1 < args.size()) {
      const std::string& v = args[++i];
      if (v.size() != 6 || v.find_first_not_of("0123456789") != std::string::npos) {
        return "--patch wants YYYYMM, got \"" + v + "\"";
      }
      spec->description.os_patch_level = std::stoi(v);
    } else if (args[i] == "--no-ecdh") {
      no_ecdh = true;
    } else if (args[i] == "--app" && i + 1 < args.size()) {
      spec->description.app_packages = {args[++i]};
    } else if (!args[i].starts_with("--") && positional->size() < 2) {
      positional->push_back(args[i]);
    } else {
      return "unexpected argument \"" + args[i] + "\"";
    }
  }
  return {};
}

// The keystore's root and intermediate from DIR (init); nullopt when they are not there.
std::optional<TestKeystore> load_keystore(const std::string& dir) {
  std::string root_pem, cert_pem, key_pem;
  if (!read_file(dir + "/root.pem", &root_pem) || !read_file(dir + "/intermediate.pem", &cert_pem) ||
      !read_file(dir + "/intermediate.key", &key_pem)) {
    return std::nullopt;
  }
  auto root = certificate_from_pem(root_pem);
  auto cert = certificate_from_pem(cert_pem);
  auto key = key_from_pem(key_pem);
  if (!root.ok() || !cert.ok() || !key.ok()) return std::nullopt;
  return std::optional<TestKeystore>(std::in_place, Authority{std::move(root).value(), nullptr},
                                     Authority{std::move(cert).value(), std::move(key).value()});
}

bool hex_bytes(const std::string& hex, std::string* out) { return hex.size() == 64 && from_hex(hex, out); }

int attest(const std::string& dir, const std::vector<std::string>& args) {
  LeafSpec spec;
  spec.validity = around_now(3600, 365 * kDay);
  std::vector<std::string> positional;
  if (std::string why = parse_flags(args, &spec, &positional); !why.empty()) return fail(why);
  if (positional.size() != 1 || !hex_bytes(positional[0], &spec.description.challenge)) {
    return fail("the challenge must be 64 hex digits");
  }
  const std::optional<TestKeystore> keystore = load_keystore(dir);
  if (!keystore) return fail(dir + ": no keystore here (run \"cs_test_keystore init " + dir + "\")");
  std::cout << boost::json::serialize(to_json(keystore->attest(spec))) << "\n";
  return 0;
}

// The helper's one key: made and attested with `spec` on first use, then kept in DIR/device.*.
std::optional<AttestedKey> device_key(const std::string& dir, const TestKeystore& keystore, const LeafSpec& spec,
                                      std::string* challenge, bool create) {
  std::string cert_pem, key_pem;
  if (read_file(dir + "/device.pem", &cert_pem) && read_file(dir + "/device.key", &key_pem) &&
      read_file(dir + "/device.challenge", challenge)) {
    auto cert = certificate_from_pem(cert_pem);
    auto key = key_from_pem(key_pem);
    if (!cert.ok() || !key.ok()) return std::nullopt;
    return AttestedKey{std::move(cert).value(), std::move(key).value()};
  }
  if (!create) return std::nullopt;
  AttestedKey leaf = make_leaf(keystore.intermediate(), spec);
  *challenge = spec.description.challenge;
  if (!write_file(dir + "/device.key", pem_of_key(leaf.key.get()), 0600) ||
      !write_file(dir + "/device.challenge", *challenge, 0600) ||
      !write_file(dir + "/device.pem", pem_of(leaf.cert.get()), 0644)) {
    return std::nullopt;
  }
  return leaf;
}

// "sign DIGEST" or "ecdh PEER_SPKI" with the kept key.
int helper_verb(const std::string& verb, const std::string& arg_hex, const AttestedKey& key) {
  std::string arg;
  if (arg_hex.size() % 2 != 0 || arg_hex.size() > 1024 || !from_hex(arg_hex, &arg)) return fail(verb + " wants hex");
  if (verb == "sign") {
    if (arg.size() != 32) return fail("sign wants 64 hex digits");
    std::cout << boost::json::serialize(
                     boost::json::object{{"signature", base64_encode(sign_sha256(key.key.get(), arg))}})
              << "\n";
    return 0;
  }
  if (no_ecdh) return fail("ecdh: this helper does not offer it");
  auto shared = ecdh_shared_secret(key.key.get(), arg);
  if (!shared.ok()) return fail("ecdh: " + shared.status().message());
  std::cout << boost::json::serialize(boost::json::object{{"shared", base64_encode(*shared)}}) << "\n";
  return 0;
}

int helper(const std::string& dir, const std::vector<std::string>& args) {
  LeafSpec spec;
  spec.validity = around_now(3600, 365 * kDay);
  std::vector<std::string> positional;
  if (std::string why = parse_flags(args, &spec, &positional); !why.empty()) return fail(why);
  const bool verb = positional.size() == 2 && (positional[0] == "sign" || positional[0] == "ecdh");
  if (!verb && (positional.size() != 1 || !hex_bytes(positional[0], &spec.description.challenge))) {
    return fail("helper wants CHALLENGE_HEX, sign DIGEST_HEX or ecdh PEER_SPKI_HEX");
  }
  const std::optional<TestKeystore> keystore = load_keystore(dir);
  if (!keystore) return fail(dir + ": no keystore here (run \"cs_test_keystore init " + dir + "\")");
  std::string challenge;
  const std::optional<AttestedKey> key = device_key(dir, *keystore, spec, &challenge, !verb);
  if (!key) return fail(dir + (verb ? ": no attested key yet (attest first)" : ": cannot keep the attested key"));
  if (verb) return helper_verb(positional[0], positional[1], *key);
  std::cout << boost::json::serialize(to_json(keystore->evidence_for(*key, challenge))) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "init") return init(args[1]);
  if (args.size() >= 3 && args[0] == "attest") return attest(args[1], {args.begin() + 2, args.end()});
  if (args.size() >= 3 && args[0] == "helper") return helper(args[1], {args.begin() + 2, args.end()});
  return fail(
      "usage: cs_test_keystore init DIR | attest DIR [FLAGS] CHALLENGE_HEX | helper DIR [FLAGS] CHALLENGE_HEX | "
      "helper DIR [FLAGS] sign DIGEST_HEX | helper DIR [FLAGS] ecdh PEER_SPKI_HEX  (FLAGS: --unlocked --software "
      "--patch YYYYMM --app PACKAGE --no-ecdh)");
}
