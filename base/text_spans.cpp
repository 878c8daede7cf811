#include "base/text_spans.h"

#include <algorithm>

namespace cellserve {

void add_span(std::vector<TextSpan>& spans, size_t begin, size_t end) {
  if (begin >= end) return;
  if (!spans.empty() && spans.back().end == begin) {
    spans.back().end = end;
    return;
  }
  spans.push_back({begin, end});
}

void append_spans(std::vector<TextSpan>& spans, std::span<const TextSpan> src, size_t offset) {
  for (const TextSpan& s : src) add_span(spans, s.begin + offset, s.end + offset);
}

std::vector<TextSpan> sub_spans(std::span<const TextSpan> spans, size_t begin, size_t end) {
  std::vector<TextSpan> out;
  if (begin >= end) return out;
  // The first span that ends after `begin`.
  auto it = std::upper_bound(spans.begin(), spans.end(), begin, [](size_t b, const TextSpan& s) { return b < s.end; });
  for (; it != spans.end() && it->begin < end; ++it)
    add_span(out, std::max(it->begin, begin) - begin, std::min(it->end, end) - begin);
  return out;
}

bool overlaps(std::span<const TextSpan> spans, size_t begin, size_t end) {
  if (begin >= end) return false;
  auto it = std::upper_bound(spans.begin(), spans.end(), begin, [](size_t b, const TextSpan& s) { return b < s.end; });
  return it != spans.end() && it->begin < end;
}

}  // namespace cellserve
