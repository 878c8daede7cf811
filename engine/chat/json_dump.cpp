#include "engine/chat/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/chat/error.h"
#include "engine/chat/py_format.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

void append_hex4(std::string& out, unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", v & 0xFFFFu);
  out += buf;
}

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_decode(s, &pos);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20) {
      append_hex4(out, static_cast<unsigned>(cp));
    } else if (cp < 0x80 || !ensure_ascii) {
      out.append(s.substr(start, pos - start));
    } else if (cp >= 0x80 && pos - start == 1) {
      append_hex4(out, static_cast<unsigned>(cp));  // an invalid byte, as Python's surrogateescape would
    } else if (cp < 0x10000) {
      append_hex4(out, static_cast<unsigned>(cp));
    } else {
      const char32_t v = cp - 0x10000;
      append_hex4(out, static_cast<unsigned>(0xD800 + (v >> 10)));
      append_hex4(out, static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return float_repr(d);
}

std::string key_text(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::String:
      return key.as_string();
    case Value::Kind::Int:
      return std::to_string(key.as_int());
    case Value::Kind::Float:
      return float_json(key.as_float());
    case Value::Kind::Bool:
      return key.as_bool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    default:
      fail_type("keys must be str, int, float, bool or None, not " + key.type_name());
  }
}

bool key_less(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_number() && b.is_number()) return a.as_float() < b.as_float();
  fail_type("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {}

  void dump(const Value& v, int level) {
    using Kind = Value::Kind;
    if (level > kMaxValueDepth) fail(ErrorKind::Limit, "value nested too deeply for tojson");
    if (out_.size() > o_.max_bytes) fail(ErrorKind::Limit, "tojson output exceeds the output size limit");
    switch (v.kind()) {
      case Kind::None:
        out_ += "null";
        return;
      case Kind::Bool:
        out_ += v.as_bool() ? "true" : "false";
        return;
      case Kind::Int:
        out_ += std::to_string(v.as_int());
        return;
      case Kind::Float:
        out_ += float_json(v.as_float());
        return;
      case Kind::String:
        dump_string(out_, v.as_string(), o_.ensure_ascii);
        return;
      case Kind::List: {
        const ValueList& items = v.as_list();
        if (items.empty()) {
          out_ += "[]";
          return;
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out_ += o_.item_separator;
          newline(level + 1);
          dump(items[i], level + 1);
        }
        newline(level);
        out_ += ']';
        return;
      }
      case Kind::Dict: {
        std::vector<const Dict::Entry*> entries;
        for (const auto& e : v.as_dict().entries()) entries.push_back(&e);
        if (entries.empty()) {
          out_ += "{}";
          return;
        }
        if (o_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const Dict::Entry* a, const Dict::Entry* b) { return key_less(a->first, b->first); });
        }
        out_ += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out_ += o_.item_separator;
          newline(level + 1);
          dump_string(out_, key_text(entries[i]->first), o_.ensure_ascii);
          out_ += o_.key_separator;
          dump(entries[i]->second, level + 1);
        }
        newline(level);
        out_ += '}';
        return;
      }
      default:
        fail_type("Object of type " + v.type_name() + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int level) {
    if (!o_.indent) return;
    if (out_.size() + o_.indent->size() * static_cast<size_t>(level) > o_.max_bytes) {
      fail(ErrorKind::Limit, "tojson output exceeds the output size limit");
    }
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *o_.indent;
  }

  const JsonDumpOptions& o_;
  std::string out_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  return d.take();
}

}  // namespace cellserve::engine::chat
