// Python's operators on Values, as Jinja2 applies them: arithmetic (+ - * / // % **), unary minus,
// comparisons, `in`, iteration and slicing. Errors are Python's (TypeError, ZeroDivisionError,
// UndefinedError for undefined operands) thrown as TemplateError. Integers are 64-bit; overflow
// fails instead of wrapping.
#pragma once

#include <cstddef>
#include <optional>

#include "engine/chat/ast.h"
#include "engine/chat/value.h"

namespace cellserve::engine::chat {

// `a op b`. Strings and lists built by + and * fail (Limit) past `max_bytes`.
Value binary_op(BinaryOp op, const Value& a, const Value& b, size_t max_bytes);
Value negate(const Value& v);
Value unary_plus(const Value& v);

// `a op b` for ==, !=, <, <=, >, >=, in, not in.
bool compare(CompareOp op, const Value& a, const Value& b);
// Python's a < b (numbers, strings by code point, lists/tuples lexicographically).
bool py_less(const Value& a, const Value& b);
// Python's `item in container`; undefined containers contain nothing.
bool py_contains(const Value& container, const Value& item);

// The items a for loop visits: a list's items, a dict's keys, a string's characters; nothing for
// undefined. Fails for values that are not iterable.
ValueList iterate(const Value& v);

// Python's v[start:stop:step] for lists, tuples and strings.
Value slice_value(const Value& v, std::optional<int64_t> start, std::optional<int64_t> stop,
                  std::optional<int64_t> step);

// Python's len() for str (code points), list, tuple and dict; undefined has length 0.
int64_t py_len(const Value& v);

}  // namespace cellserve::engine::chat
