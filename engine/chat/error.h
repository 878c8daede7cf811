// TemplateError: how the interpreter reports a failure internally. It is thrown inside
// engine/chat and turned into a Status at the ChatTemplate boundary; it never leaves the module.
#pragma once

#include <exception>
#include <string>
#include <utility>

namespace cellserve::engine::chat {

class Value;

enum class ErrorKind {
  Syntax,       // malformed template text
  Unsupported,  // valid Jinja2 outside cellserve's subset (named in the message)
  Raised,       // the template called raise_exception(message)
  Undefined,    // an operation on an undefined value (Jinja2's UndefinedError)
  Type,         // Python TypeError / ValueError / ZeroDivisionError equivalents
  Security,     // something Jinja2's ImmutableSandboxedEnvironment refuses (list.append)
  Limit,        // output size, step count or nesting depth exceeded
};

// Whether a filter, test, tag or method name is part of cellserve's subset: Unsupported names are
// real Jinja2/Python features outside it, Unknown names exist in neither.
enum class Support { Supported, Unsupported, Unknown };

class TemplateError : public std::exception {
 public:
  TemplateError(ErrorKind kind, std::string message, int line = 0)
      : kind_(kind), message_(std::move(message)), line_(line) {}

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  // The template line the error belongs to; 0 until a statement or expression claims it.
  int line() const { return line_; }
  void set_line(int line) { line_ = line; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  ErrorKind kind_;
  std::string message_;
  int line_;
};

[[noreturn]] inline void fail(ErrorKind kind, std::string message) { throw TemplateError(kind, std::move(message)); }
[[noreturn]] inline void fail_type(std::string message) { fail(ErrorKind::Type, std::move(message)); }
// Fails the way Jinja2 does when an undefined value is used (printing it is fine; arithmetic,
// calls, attribute access and comparisons are not).
[[noreturn]] void fail_undefined(const Value& undefined);

}  // namespace cellserve::engine::chat
