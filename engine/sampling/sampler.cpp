#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace cellserve::engine {

Status SamplingParams::validate(int64_t n_vocab) const {
  if (!(temperature >= 0.0f && temperature <= 100.0f))
    return Status::invalid_argument("temperature must be in [0, 100]");
  if (!(top_p > 0.0f && top_p <= 1.0f)) return Status::invalid_argument("top_p must be in (0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return Status::invalid_argument("min_p must be in [0, 1]");
  if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty))
    return Status::invalid_argument("repeat_penalty must be > 0");
  if (!(std::fabs(frequency_penalty) <= 2.0f)) return Status::invalid_argument("frequency_penalty must be in [-2, 2]");
  if (!(std::fabs(presence_penalty) <= 2.0f)) return Status::invalid_argument("presence_penalty must be in [-2, 2]");
  if (penalty_last_n < 0) return Status::invalid_argument("penalty window must be >= 0");
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return Status::invalid_argument("logit_bias token " + std::to_string(id) + " is out of range [0, " +
                                      std::to_string(n_vocab) + ")");
    }
    if (std::isnan(bias)) return Status::invalid_argument("logit_bias value is not a number");
  }
  return {};
}

namespace sampling {
namespace {
void sort_desc(std::vector<Candidate>& c) {
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
}
}  // namespace

void apply_logit_bias(std::vector<Candidate>& c, const std::vector<std::pair<int32_t, float>>& bias) {
  if (bias.empty()) return;
  // Candidates are indexed by id until the first stage that reorders them.
  for (const auto& [id, b] : bias) {
    if (id >= 0 && static_cast<size_t>(id) < c.size() && c[static_cast<size_t>(id)].id == id)
      c[static_cast<size_t>(id)].logit += b;
  }
}

void apply_penalties(std::vector<Candidate>& c, std::span<const int32_t> recent, float repeat, float frequency,
                     float presence) {
  if (recent.empty() || (repeat == 1.0f && frequency == 0.0f && presence == 0.0f)) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : recent) ++counts[t];
  for (Candidate& cand : c) {
    auto it = counts.find(cand.id);
    if (it == counts.end()) continue;
    cand.logit = cand.logit > 0.0f ? cand.logit / repeat : cand.logit * repeat;
    cand.logit -= static_cast<float>(it->second) * frequency + presence;
  }
}

void top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= c.size()) {
    sort_desc(c);
    return;
  }
  std::partial_sort(c.begin(), c.begin() + k, c.end(), [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
  c.resize(static_cast<size_t>(k));
}

void softmax(std::vector<Candidate>& c) {
  sort_desc(c);
  const float max = c.front().logit;
  double sum = 0.0;
  for (Candidate& cand : c) {
    cand.p = std::exp(cand.logit - max);
    sum += cand.p;
  }
  for (Candidate& cand : c) cand.p = static_cast<float>(cand.p / sum);
}

void top_p(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f) return;
  softmax(c);
  double cum = 0.0;
  size_t keep = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].p;
    if (cum >= p) {
      keep = i + 1;
      break;
    }
  }
  c.resize(std::max<size_t>(keep, 1));
}

void min_p(std::vector<Candidate>& c, float p) {
  if (p <= 0.0f) return;
  sort_desc(c);
  // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p).
  const float threshold = c.front().logit + std::log(p);
  size_t keep = 1;
  while (keep < c.size() && c[keep].logit >= threshold) ++keep;
  c.resize(keep);
}

void temperature(std::vector<Candidate>& c, float t) {
  for (Candidate& cand : c) cand.logit /= t;
}

int32_t argmax(const std::vector<Candidate>& c) {
  const auto best = std::max_element(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    return a.logit < b.logit || (a.logit == b.logit && a.id > b.id);
  });
  return best->id;
}

int32_t draw(std::vector<Candidate>& c, std::mt19937_64& rng) {
  softmax(c);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double r = uniform(rng);
  double cum = 0.0;
  for (const Candidate& cand : c) {
    cum += cand.p;
    if (r < cum) return cand.id;
  }
  // Rounding left a sliver above the last cumulative sum: the least likely candidate that has a
  // chance at all (banned ones, at the end after the sort, have none).
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    if (it->p > 0.0f) return it->id;
  }
  return c.front().id;
}

}  // namespace sampling

Sampler::Sampler(SamplingParams params) : params_(std::move(params)), rng_(params_.seed) {}

void Sampler::accept(int32_t token) {
  if (params_.penalty_last_n <= 0) return;
  recent_.push_back(token);
  while (recent_.size() > static_cast<size_t>(params_.penalty_last_n)) recent_.pop_front();
}

void Sampler::reset() {
  recent_.clear();
  rng_.seed(params_.seed);
}

int32_t Sampler::sample(std::span<const float> logits) {
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = Candidate{static_cast<int32_t>(i), logits[i], 0.0f};
  sampling::apply_logit_bias(candidates_, params_.logit_bias);
  const std::vector<int32_t> recent(recent_.begin(), recent_.end());
  sampling::apply_penalties(candidates_, recent, params_.repeat_penalty, params_.frequency_penalty,
                            params_.presence_penalty);
  // Penalties keep -inf at -inf, so a banned token stays banned; the stages below could still
  // hand one out when nothing else is left (argmax of all -inf is id 0), so stop here.
  const bool any = std::any_of(candidates_.begin(), candidates_.end(),
                               [](const Candidate& c) { return c.logit > -std::numeric_limits<float>::infinity(); });
  if (!any) return kNoCandidate;
  if (params_.temperature <= 0.0f) return sampling::argmax(candidates_);
  sampling::top_k(candidates_, params_.top_k);
  sampling::top_p(candidates_, params_.top_p);
  sampling::min_p(candidates_, params_.min_p);
  sampling::temperature(candidates_, params_.temperature);
  return sampling::draw(candidates_, rng_);
}

}  // namespace cellserve::engine
