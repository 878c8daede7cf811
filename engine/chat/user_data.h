// How the request's data is followed through a render (see marked_text.h). Strings built from
// the template variables that carry request data are marked byte by byte, and every string
// operation passes the marks on:
//  - operations that move bytes (concatenation, ~, join, slicing, indexing, strip, split,
//    partition, replace, removeprefix, indent, macro and block output) keep each byte's mark;
//  - character-wise conversions (upper, lower, escape) keep the marks run by run;
//  - anything else that builds a string from marked input (title, str.format, %, tojson, repr of
//    containers) marks the whole result.
// Marking too much only makes some data-derived text tokenize as plain text; marking too little
// would let data forge a turn, so every doubtful case marks.
#pragma once

#include <string>
#include <string_view>

#include "engine/chat/marked_text.h"
#include "engine/chat/value.h"

namespace cellserve::engine::chat {

// True when `v` is or holds marked data: a marked string, a list or dict with one among its
// items, keys or values (nested), or an object (namespace, loop: not inspected, so counted).
bool has_user_data(const Value& v);

// `s`, all of it marked when `user` (else none of it).
Value derived_string(std::string s, bool user, bool markup = false);

// Bytes [pos, pos + len) of string `s`, with their marks.
Value substring(const Value& s, size_t pos, size_t len, bool markup);

// Python's s.strip(chars) / lstrip / rstrip (chars null: whitespace) of string `s`: the bytes
// kept, with their marks; Markup stays Markup.
Value strip_value(const Value& s, const std::string* chars, bool left, bool right);

// Jinja2's soft_str with marks: strings unchanged, anything else through str(), marked as a
// whole when it holds marked data.
Value str_value(const Value& v);

// Appends str(v) to `out` with its marks (as str_value).
void append_str(MarkedText& out, const Value& v);

// The text and marks of string `s`, as a MarkedText to build on.
MarkedText marked_text(const Value& s);

// `fn` (a character-wise conversion such as html_escape or py_upper) applied to string `s`; the
// marks follow run by run when converting the runs separately gives the same text, else the
// whole result is marked.
Value map_chars(const Value& s, std::string (*fn)(std::string_view), bool markup);

}  // namespace cellserve::engine::chat
