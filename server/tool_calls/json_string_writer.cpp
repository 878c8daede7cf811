#include "server/tool_calls/json_string_writer.h"

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void append_ascii(unsigned char c, std::string& out) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    default:
      break;
  }
  if (c < 0x20) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
    return;
  }
  out += static_cast<char>(c);
}

}  // namespace

void JsonStringWriter::feed(char byte, std::string& out) {
  const auto b = static_cast<unsigned char>(byte);
  if (utf8_.in_character()) {
    const Utf8Sequence::Result r = utf8_.feed(b);
    if (r == Utf8Sequence::Result::Invalid) {
      // The character broke off; `byte` starts afresh (it is not in a character any more).
      out += kReplacement;
      pending_.clear();
      feed(byte, out);
      return;
    }
    pending_ += byte;
    if (r == Utf8Sequence::Result::Complete) {
      out += pending_;
      pending_.clear();
    }
    return;
  }
  if (b < 0x80) {
    append_ascii(b, out);
    return;
  }
  if (utf8_.feed(b) == Utf8Sequence::Result::Invalid) {
    out += kReplacement;
    return;
  }
  pending_ = byte;
}

void JsonStringWriter::finish(std::string& out) {
  if (!pending_.empty()) out += kReplacement;
  reset();
}

void JsonStringWriter::reset() {
  utf8_.reset();
  pending_.clear();
}

void append_json_string_body(std::string_view text, std::string& out) {
  JsonStringWriter writer;
  for (char c : text) writer.feed(c, out);
  writer.finish(out);
}

}  // namespace cellserve::server::tool_calls::detail
