#include "server/scheduler/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cellserve::server {

GeneratedToken token_logprobs(std::span<const float> logits, int32_t chosen, int32_t top,
                              const engine::tokenizer::Tokenizer& tok) {
  float max_logit = -INFINITY;
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const double log_z = static_cast<double>(max_logit) + std::log(sum);
  auto entry = [&](int32_t id) {
    TokenLogprob t;
    t.token = id;
    t.text = tok.token_to_piece(id, /*special=*/true);
    t.logprob = static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z);
    return t;
  };
  GeneratedToken g;
  g.chosen = entry(chosen);
  if (top > 0) {
    const size_t k = std::min(static_cast<size_t>(top), logits.size());
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
      const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
      return la != lb ? la > lb : a < b;
    });
    for (size_t i = 0; i < k; ++i) g.top.push_back(entry(ids[i]));
  }
  return g;
}

}  // namespace cellserve::server
