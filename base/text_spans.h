// TextSpan: a byte range of a string, and sorted lists of them. A rendered chat prompt uses them
// to say which of its bytes came from the request's data rather than from the template
// (engine/chat/marked_text.h); the tokenizer reads them to keep special-token text there plain.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace cellserve {

struct TextSpan {
  size_t begin = 0;  // [begin, end) in bytes
  size_t end = 0;
  bool operator==(const TextSpan&) const = default;
};

// A span list is sorted, and its spans are non-empty, disjoint and not adjacent (touching spans
// are merged), so equal byte sets have equal lists. The functions below keep that form.

// Adds [begin, end) at the end of `spans`. REQUIRES: begin >= spans.back().end.
void add_span(std::vector<TextSpan>& spans, size_t begin, size_t end);
// Adds `src` shifted right by `offset`. REQUIRES: offset >= spans.back().end.
void append_spans(std::vector<TextSpan>& spans, std::span<const TextSpan> src, size_t offset);
// The part of `spans` inside [begin, end), shifted so that `begin` becomes 0.
std::vector<TextSpan> sub_spans(std::span<const TextSpan> spans, size_t begin, size_t end);
// True when some byte of [begin, end) lies in a span.
bool overlaps(std::span<const TextSpan> spans, size_t begin, size_t end);

}  // namespace cellserve
