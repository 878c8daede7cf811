#include "fleet/attest/base64.h"

#include <openssl/evp.h>

#include <array>

namespace cellserve::fleet::attest {
namespace {

// -1 for a byte outside the alphabet.
constexpr std::array<signed char, 256> make_table() {
  std::array<signed char, 256> t{};
  for (auto& v : t) v = -1;
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < kAlphabet.size(); ++i)
    t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<signed char>(i);
  return t;
}
constexpr std::array<signed char, 256> kDecode = make_table();

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    // Padding only in the last quantum: "xx==" or "xxx=".
    const size_t pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    unsigned int bits = 0;
    for (size_t j = 0; j < 4; ++j) {
      int v = 0;
      if (j < 4 - pad) {
        v = kDecode[static_cast<unsigned char>(text[i + j])];
        if (v < 0) return std::nullopt;
      }
      bits = (bits << 6) | static_cast<unsigned int>(v);
    }
    out.push_back(static_cast<char>(bits >> 16));
    if (pad < 2) out.push_back(static_cast<char>((bits >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(bits & 0xff));
  }
  return out;
}

}  // namespace cellserve::fleet::attest
