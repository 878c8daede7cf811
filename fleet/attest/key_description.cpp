#include "fleet/attest/key_description.h"

#include <climits>
#include <cstdint>

#include "fleet/attest/openssl_util.h"

namespace cellserve::fleet::attest {
namespace {

constexpr int kTagRootOfTrust = 704;
constexpr int kTagOsPatchLevel = 706;
constexpr int kTagApplicationId = 709;
// A real AttestationApplicationId names one package (a few for a shared uid) and one to a few
// signing digests; these bounds only stop garbage.
constexpr size_t kMaxApplicationEntries = 64;

Status bad_key_description(const std::string& what) { return Status::data_loss("KeyDescription: " + what); }

// One DER element as ASN1_get_object reads it.
struct Tlv {
  int tag = 0;
  int cls = 0;  // V_ASN1_UNIVERSAL, V_ASN1_CONTEXT_SPECIFIC, ...
  bool constructed = false;
  const unsigned char* start = nullptr;    // first header byte
  const unsigned char* content = nullptr;  // first content byte
  long length = 0;                         // content bytes
  long size() const { return static_cast<long>(content - start) + length; }
};

// Reads consecutive DER elements from a byte range. ASN1_get_object refuses (0x80) any length
// that runs past what is left of the range, so a lying length can never move the reader
// outside it; indefinite lengths (BER, never DER) are refused here.
class DerReader {
 public:
  DerReader(const unsigned char* p, long n) : p_(p), end_(p + n) {}
  explicit DerReader(const Tlv& t) : DerReader(t.content, t.length) {}

  bool at_end() const { return p_ >= end_; }

  Status next(Tlv* out, const std::string& what) {
    if (at_end()) return bad_key_description(what + ": missing (truncated)");
    const unsigned char* q = p_;
    long length = 0;
    int tag = 0;
    int cls = 0;
    const int flags = ASN1_get_object(&q, &length, &tag, &cls, static_cast<long>(end_ - p_));
    if (flags & 0x80) return bad_key_description(what + ": truncated or malformed DER");
    if (flags & 0x01) return bad_key_description(what + ": indefinite length (not DER)");
    out->tag = tag;
    out->cls = cls;
    out->constructed = (flags & V_ASN1_CONSTRUCTED) != 0;
    out->start = p_;
    out->content = q;
    out->length = length;
    p_ = q + length;
    return {};
  }

  // Reads the next element and checks it is a universal `tag` (constructed or not as given).
  Status expect(int tag, bool constructed, Tlv* out, const std::string& what) {
    CS_RETURN_IF_ERROR(next(out, what));
    if (out->cls != V_ASN1_UNIVERSAL || out->tag != tag || out->constructed != constructed) {
      return bad_key_description(what + ": unexpected type (universal tag " + std::to_string(tag) + " expected)");
    }
    return {};
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
};

// INTEGER or ENUMERATED content through OpenSSL's decoder, bounded to int.
Result<int> read_int(const Tlv& t, bool enumerated, const std::string& what) {
  const unsigned char* p = t.start;
  int64_t v = 0;
  bool ok = false;
  if (enumerated) {
    std::unique_ptr<ASN1_ENUMERATED, OpenSslDeleter<ASN1_ENUMERATED, ASN1_ENUMERATED_free>> e(
        d2i_ASN1_ENUMERATED(nullptr, &p, t.size()));
    ok = e && ASN1_ENUMERATED_get_int64(&v, e.get()) == 1;
  } else {
    IntegerPtr i(d2i_ASN1_INTEGER(nullptr, &p, t.size()));
    ok = i && ASN1_INTEGER_get_int64(&v, i.get()) == 1;
  }
  if (!ok || p != t.start + t.size()) return bad_key_description(what + ": not a valid integer");
  if (v < INT_MIN || v > INT_MAX) return bad_key_description(what + ": " + std::to_string(v) + " out of range");
  return static_cast<int>(v);
}

Result<int> expect_int(DerReader& r, bool enumerated, const std::string& what) {
  Tlv t;
  CS_RETURN_IF_ERROR(r.expect(enumerated ? V_ASN1_ENUMERATED : V_ASN1_INTEGER, false, &t, what));
  return read_int(t, enumerated, what);
}

Result<std::string> expect_octets(DerReader& r, const std::string& what) {
  Tlv t;
  CS_RETURN_IF_ERROR(r.expect(V_ASN1_OCTET_STRING, false, &t, what));
  return std::string(reinterpret_cast<const char*>(t.content), static_cast<size_t>(t.length));
}

Result<SecurityLevel> expect_security_level(DerReader& r, const std::string& what) {
  CS_ASSIGN_OR_RETURN(const int v, expect_int(r, true, what));
  if (v < 0 || v > 2) return bad_key_description(what + ": unknown security level " + std::to_string(v));
  return static_cast<SecurityLevel>(v);
}

Result<RootOfTrust> parse_root_of_trust(const Tlv& seq, const std::string& where) {
  const std::string what = where + ".rootOfTrust";
  if (seq.cls != V_ASN1_UNIVERSAL || seq.tag != V_ASN1_SEQUENCE || !seq.constructed) {
    return bad_key_description(what + ": not a SEQUENCE");
  }
  DerReader r(seq);
  RootOfTrust rot;
  CS_ASSIGN_OR_RETURN(rot.verified_boot_key, expect_octets(r, what + ".verifiedBootKey"));
  Tlv locked;
  CS_RETURN_IF_ERROR(r.expect(V_ASN1_BOOLEAN, false, &locked, what + ".deviceLocked"));
  if (locked.length != 1) return bad_key_description(what + ".deviceLocked: not a one-byte BOOLEAN");
  rot.device_locked = locked.content[0] != 0;  // BER: any non-zero byte is TRUE (DER: 0xFF)
  CS_ASSIGN_OR_RETURN(const int state, expect_int(r, true, what + ".verifiedBootState"));
  if (state < 0 || state > 3)
    return bad_key_description(what + ".verifiedBootState: unknown value " + std::to_string(state));
  rot.verified_boot_state = static_cast<VerifiedBootState>(state);
  if (!r.at_end()) {
    CS_ASSIGN_OR_RETURN(rot.verified_boot_hash, expect_octets(r, what + ".verifiedBootHash"));
  }
  if (!r.at_end()) return bad_key_description(what + ": trailing elements");
  return rot;
}

// Reads `set` (a universal SET) element by element into `out` through `read_one`.
template <typename ReadOne>
Status read_set(const Tlv& set, const std::string& what, ReadOne read_one) {
  if (set.cls != V_ASN1_UNIVERSAL || set.tag != V_ASN1_SET || !set.constructed)
    return bad_key_description(what + ": not a SET");
  DerReader r(set);
  for (size_t n = 0; !r.at_end(); ++n) {
    if (n == kMaxApplicationEntries) return bad_key_description(what + ": more than " + std::to_string(n) + " entries");
    CS_RETURN_IF_ERROR(read_one(r));
  }
  return {};
}

// The DER inside attestationApplicationId's OCTET STRING.
Result<ApplicationId> parse_application_id(const Tlv& octets, const std::string& what) {
  if (octets.cls != V_ASN1_UNIVERSAL || octets.tag != V_ASN1_OCTET_STRING || octets.constructed) {
    return bad_key_description(what + ": not an OCTET STRING");
  }
  DerReader top(octets);
  Tlv seq;
  CS_RETURN_IF_ERROR(top.expect(V_ASN1_SEQUENCE, true, &seq, what));
  if (!top.at_end()) return bad_key_description(what + ": trailing bytes");
  DerReader r(seq);
  ApplicationId app;
  Tlv packages;
  CS_RETURN_IF_ERROR(r.next(&packages, what + ".packageInfos"));
  CS_RETURN_IF_ERROR(read_set(packages, what + ".packageInfos", [&](DerReader& set) -> Status {
    Tlv info;
    CS_RETURN_IF_ERROR(set.expect(V_ASN1_SEQUENCE, true, &info, what + ".packageInfo"));
    DerReader fields(info);
    CS_ASSIGN_OR_RETURN(std::string name, expect_octets(fields, what + ".packageName"));
    CS_RETURN_IF_ERROR(expect_int(fields, false, what + ".version").status());
    if (!fields.at_end()) return bad_key_description(what + ".packageInfo: trailing elements");
    app.packages.push_back(std::move(name));
    return {};
  }));
  Tlv digests;
  CS_RETURN_IF_ERROR(r.next(&digests, what + ".signatureDigests"));
  CS_RETURN_IF_ERROR(read_set(digests, what + ".signatureDigests", [&](DerReader& set) -> Status {
    CS_ASSIGN_OR_RETURN(std::string digest, expect_octets(set, what + ".signatureDigest"));
    app.signature_digests.push_back(std::move(digest));
    return {};
  }));
  if (!r.at_end()) return bad_key_description(what + ": trailing elements");
  return app;
}

// The one element inside an [n] EXPLICIT field.
Status explicit_inner(const Tlv& field, Tlv* inner, const std::string& what) {
  DerReader r(field);
  CS_RETURN_IF_ERROR(r.next(inner, what));
  if (!r.at_end()) return bad_key_description(what + ": trailing bytes inside the tag");
  return {};
}

Status parse_authorization_list(DerReader& outer, AuthorizationList* out, const std::string& what) {
  Tlv seq;
  CS_RETURN_IF_ERROR(outer.expect(V_ASN1_SEQUENCE, true, &seq, what));
  DerReader r(seq);
  while (!r.at_end()) {
    Tlv field;
    CS_RETURN_IF_ERROR(r.next(&field, what + " field"));
    if (field.cls != V_ASN1_CONTEXT_SPECIFIC || !field.constructed) {
      return bad_key_description(what + ": an element that is not an [n] EXPLICIT field");
    }
    // Devices do not always emit fields in schema order, so order is not checked; a repeat of
    // a field the hub reads is refused (two verifiers could otherwise read different values).
    const std::string name = what + "[" + std::to_string(field.tag) + "]";
    if (field.tag == kTagRootOfTrust) {
      if (out->root_of_trust) return bad_key_description(name + ": rootOfTrust repeated");
      Tlv inner;
      CS_RETURN_IF_ERROR(explicit_inner(field, &inner, name));
      CS_ASSIGN_OR_RETURN(out->root_of_trust, parse_root_of_trust(inner, what));
    } else if (field.tag == kTagOsPatchLevel) {
      if (out->os_patch_level) return bad_key_description(name + ": osPatchLevel repeated");
      Tlv inner;
      CS_RETURN_IF_ERROR(explicit_inner(field, &inner, name));
      if (inner.cls != V_ASN1_UNIVERSAL || inner.tag != V_ASN1_INTEGER || inner.constructed) {
        return bad_key_description(name + ": osPatchLevel is not an INTEGER");
      }
      CS_ASSIGN_OR_RETURN(out->os_patch_level, read_int(inner, false, what + ".osPatchLevel"));
    } else if (field.tag == kTagApplicationId) {
      if (out->application_id) return bad_key_description(name + ": attestationApplicationId repeated");
      Tlv inner;
      CS_RETURN_IF_ERROR(explicit_inner(field, &inner, name));
      CS_ASSIGN_OR_RETURN(out->application_id, parse_application_id(inner, what + ".attestationApplicationId"));
    }
  }
  return {};
}

}  // namespace

const char* security_level_name(SecurityLevel level) {
  switch (level) {
    case SecurityLevel::Software:
      return "Software";
    case SecurityLevel::TrustedEnvironment:
      return "TrustedEnvironment";
    case SecurityLevel::StrongBox:
      return "StrongBox";
  }
  return "unknown";
}

const char* verified_boot_state_name(VerifiedBootState state) {
  switch (state) {
    case VerifiedBootState::Verified:
      return "Verified";
    case VerifiedBootState::SelfSigned:
      return "SelfSigned";
    case VerifiedBootState::Unverified:
      return "Unverified";
    case VerifiedBootState::Failed:
      return "Failed";
  }
  return "unknown";
}

Result<KeyDescription> parse_key_description(std::string_view der) {
  if (der.empty() || der.size() > static_cast<size_t>(LONG_MAX)) return bad_key_description("empty");
  const OpenSslErrorScope errors;
  DerReader top(reinterpret_cast<const unsigned char*>(der.data()), static_cast<long>(der.size()));
  Tlv seq;
  CS_RETURN_IF_ERROR(top.expect(V_ASN1_SEQUENCE, true, &seq, "the outer SEQUENCE"));
  if (!top.at_end()) return bad_key_description("trailing bytes after the SEQUENCE");

  DerReader r(seq);
  KeyDescription kd;
  CS_ASSIGN_OR_RETURN(kd.attestation_version, expect_int(r, false, "attestationVersion"));
  CS_ASSIGN_OR_RETURN(kd.attestation_security_level, expect_security_level(r, "attestationSecurityLevel"));
  CS_ASSIGN_OR_RETURN(kd.keymint_version, expect_int(r, false, "keyMintVersion"));
  CS_ASSIGN_OR_RETURN(kd.keymint_security_level, expect_security_level(r, "keyMintSecurityLevel"));
  CS_ASSIGN_OR_RETURN(kd.attestation_challenge, expect_octets(r, "attestationChallenge"));
  CS_ASSIGN_OR_RETURN(kd.unique_id, expect_octets(r, "uniqueId"));
  CS_RETURN_IF_ERROR(parse_authorization_list(r, &kd.software_enforced, "softwareEnforced"));
  CS_RETURN_IF_ERROR(parse_authorization_list(r, &kd.hardware_enforced, "hardwareEnforced"));
  // Later schema versions may append fields: they must still be well-formed, and are skipped.
  while (!r.at_end()) {
    Tlv extra;
    CS_RETURN_IF_ERROR(r.next(&extra, "trailing KeyDescription field"));
  }
  return kd;
}

}  // namespace cellserve::fleet::attest
