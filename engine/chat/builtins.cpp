#include "engine/chat/builtins.h"

#include <ctime>
#include <map>
#include <memory>
#include <vector>

#include "engine/chat/call_args.h"
#include "engine/chat/error.h"
#include "engine/chat/objects.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/renderer.h"

namespace cellserve::engine::chat {
namespace {

// Jinja2's sandbox refuses larger ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

int64_t index_arg(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_integral()) fail_type("'" + v.type_name() + "' object cannot be interpreted as an integer");
  return v.as_int();
}

Value g_range(Renderer& r, CallArgs& args) {
  if (!args.keyword.empty()) fail_type("range() takes no keyword arguments");
  const size_t n = args.positional.size();
  if (n < 1 || n > 3) fail_type("range expected 1 to 3 arguments, got " + std::to_string(n));
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (n == 1) {
    stop = index_arg(args.positional[0]);
  } else {
    start = index_arg(args.positional[0]);
    stop = index_arg(args.positional[1]);
    if (n == 3) step = index_arg(args.positional[2]);
  }
  if (step == 0) fail_type("range() arg 3 must not be zero");
  const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 abs_step = step > 0 ? step : -static_cast<__int128>(step);
  const __int128 count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  if (count > kMaxRange) fail_type("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  r.charge(static_cast<uint64_t>(count));
  ValueList out;
  for (__int128 i = 0; i < count; ++i) out.push_back(Value::integer(static_cast<int64_t>(start + i * step)));
  return Value::list(std::move(out));
}

Dict dict_from_args(CallArgs& args, const char* name) {
  if (args.positional.size() > 1) fail_type(std::string(name) + " expected at most 1 positional argument");
  Dict d;
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      const ValueList pairs = iterate(src);
      for (const Value& pair : pairs) {
        if (!pair.is_list() || pair.as_list().size() != 2)
          fail_type(std::string(name) + ": sequence elements must be pairs");
        if (!pair.as_list()[0].is_hashable()) fail_type("unhashable type: '" + pair.as_list()[0].type_name() + "'");
        d.set(pair.as_list()[0], pair.as_list()[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keyword) d.set(Value::string(key), value);
  return d;
}

Value g_dict(Renderer&, CallArgs& args) { return Value::dict(dict_from_args(args, "dict")); }

Value g_namespace(Renderer& r, CallArgs& args) {
  auto ns = std::make_shared<NamespaceObject>(dict_from_args(args, "namespace"));
  r.adopt(ns);
  return Value::object(std::move(ns));
}

Value g_joiner(Renderer&, CallArgs& args) {
  auto a = bind_args(args, {{"sep", Value::string(", ")}}, "joiner");
  auto used = std::make_shared<bool>(false);
  auto fn = std::make_shared<Callable>();
  fn->name = "joiner";
  fn->native = [sep = a[0], used](Renderer&, CallArgs& call) -> Value {
    bind_args(call, {}, "joiner");
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return sep;
  };
  return Value::callable(std::move(fn));
}

Value g_unsupported(Renderer&, CallArgs&) { fail(ErrorKind::Unsupported, "cycler() and lipsum() are not supported"); }

// Hugging Face: raise_exception(message) raises jinja2.exceptions.TemplateError(message).
Value g_raise_exception(Renderer&, CallArgs& args) {
  auto a = bind_args(args, {"message"}, "raise_exception");
  fail(ErrorKind::Raised, py_str(a[0]));
}

// Hugging Face: strftime_now(format) = datetime.now().strftime(format).
Value g_strftime_now(Renderer& r, CallArgs& args) {
  auto a = bind_args(args, {"format"}, "strftime_now");
  if (!a[0].is_string()) fail_type("strftime() argument 1 must be str, not " + a[0].type_name());
  std::tm now{};
  if (r.options().now) {
    now = *r.options().now;
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &now);
  }
  std::string out = py_strftime(a[0].as_string(), now);
  r.check_size(out.size());
  return Value::string(std::move(out));
}

Value make_builtin(const char* name, NativeFn fn) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->native = std::move(fn);
  return Value::callable(std::move(c));
}

const std::map<std::string, Value, std::less<>>& globals() {
  static const auto* table = new std::map<std::string, Value, std::less<>>{
      {"range", make_builtin("range", g_range)},
      {"dict", make_builtin("dict", g_dict)},
      {"namespace", make_builtin("namespace", g_namespace)},
      {"joiner", make_builtin("joiner", g_joiner)},
      {"cycler", make_builtin("cycler", g_unsupported)},
      {"lipsum", make_builtin("lipsum", g_unsupported)},
      {"raise_exception", make_builtin("raise_exception", g_raise_exception)},
      {"strftime_now", make_builtin("strftime_now", g_strftime_now)},
  };
  return *table;
}

}  // namespace

const Value* find_global(std::string_view name) {
  const auto& table = globals();
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

std::string py_strftime(const std::string& format, const std::tm& time) {
  // Python handles %f, %z and %Z itself; a naive datetime has no zone.
  std::string fmt;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      const char c = format[i + 1];
      if (c == 'f')
        fmt += "000000";
      else if (c == 'z' || c == 'Z') {
      } else
        fmt += format.substr(i, 2);
      ++i;
    } else {
      fmt += format[i];
    }
  }
  if (fmt.empty()) return {};
  // A space sentinel tells an empty result apart from a buffer that is too small.
  fmt += ' ';
  for (size_t size = 256 + fmt.size() * 4; size <= (1u << 22); size *= 4) {
    std::vector<char> buf(size);
    const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &time);
    if (n > 0) return std::string(buf.data(), n - 1);
  }
  fail(ErrorKind::Limit, "strftime result too long");
}

}  // namespace cellserve::engine::chat
