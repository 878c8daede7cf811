#include "server/embeddings/pooling.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/check.h"

namespace cellserve::server::embeddings {

namespace {

struct NamedPooling {
  Pooling pooling;
  std::string_view name;
};
constexpr std::array<NamedPooling, 4> kNames{{
    {Pooling::None, "none"},
    {Pooling::Mean, "mean"},
    {Pooling::Cls, "cls"},
    {Pooling::Last, "last"},
}};

// llama.cpp's enum llama_pooling_type.
constexpr int64_t kGgufRank = 4;
constexpr std::array<Pooling, 4> kGgufPooling{Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last};

}  // namespace

std::string_view pooling_name(Pooling p) {
  for (const NamedPooling& n : kNames) {
    if (n.pooling == p) return n.name;
  }
  return "unknown";
}

std::optional<Pooling> pooling_from_name(std::string_view name) {
  for (const NamedPooling& n : kNames) {
    if (n.name == name) return n.pooling;
  }
  return std::nullopt;
}

Result<std::optional<Pooling>> pooling_from_gguf(const engine::GgufFile& file) {
  const std::string key = file.get_string("general.architecture").value_or("") + ".pooling_type";
  if (file.find(key) == nullptr) return std::optional<Pooling>{};
  const std::optional<int64_t> v = file.get_int(key);
  if (!v) return Status::invalid_argument(key + " is not an integer");
  if (*v == kGgufRank) {
    return Status::unimplemented(key +
                                 " is 4 (rank): the model scores query/document pairs, which cellserve does "
                                 "not serve; give --pooling to embed with it anyway");
  }
  if (*v < 0 || *v >= static_cast<int64_t>(kGgufPooling.size()))
    return Status::invalid_argument(key + " is " + std::to_string(*v) + ", not one of 0 (none) .. 4 (rank)");
  return std::optional<Pooling>{kGgufPooling[static_cast<size_t>(*v)]};
}

Result<PoolingChoice> choose_pooling(std::string_view flag, const engine::GgufFile& file) {
  if (!flag.empty()) {
    const std::optional<Pooling> p = pooling_from_name(flag);
    if (!p)
      return Status::invalid_argument("--pooling must be none, mean, cls or last, got '" + std::string(flag) + "'");
    return PoolingChoice{*p, "--pooling"};
  }
  CS_ASSIGN_OR_RETURN(const std::optional<Pooling> from_file, pooling_from_gguf(file));
  if (from_file) return PoolingChoice{*from_file, "the GGUF's pooling_type"};
  return PoolingChoice{Pooling::Last, "the default for a model whose GGUF sets no pooling_type"};
}

void l2_normalize(std::span<float> v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  const double norm = std::sqrt(sum);
  const double scale = norm > 0 ? 1.0 / norm : 0.0;
  for (float& x : v) x = static_cast<float>(x * scale);
}

bool pooling_reads(Pooling p, int64_t pos, int64_t n_tokens) {
  switch (p) {
    case Pooling::Cls:
      return pos == 0;
    case Pooling::Last:
      return pos == n_tokens - 1;
    case Pooling::None:
    case Pooling::Mean:
      return true;
  }
  return true;
}

Pooler::Pooler(Pooling p, int64_t width) : pooling_(p), width_(width) {
  if (p == Pooling::Mean) sum_.assign(static_cast<size_t>(width), 0.0);
}

void Pooler::add(std::span<const float> row) {
  CS_CHECK(static_cast<int64_t>(row.size()) == width_) << "row of " << row.size() << " floats, width " << width_;
  ++n_added_;
  switch (pooling_) {
    case Pooling::Mean:
      for (size_t i = 0; i < row.size(); ++i) sum_[i] += row[i];
      break;
    case Pooling::None:
      rows_.insert(rows_.end(), row.begin(), row.end());
      break;
    case Pooling::Cls:
    case Pooling::Last:
      rows_.assign(row.begin(), row.end());
      break;
  }
}

std::vector<float> Pooler::finish() {
  CS_CHECK(n_added_ > 0) << "Pooler::finish() without rows";
  std::vector<float> out;
  if (pooling_ == Pooling::Mean) {
    out.resize(sum_.size());
    for (size_t i = 0; i < sum_.size(); ++i) out[i] = static_cast<float>(sum_[i] / static_cast<double>(n_added_));
    std::fill(sum_.begin(), sum_.end(), 0.0);
  } else {
    out.swap(rows_);
  }
  for (size_t r = 0; r < out.size(); r += static_cast<size_t>(width_))
    l2_normalize(std::span<float>(out).subspan(r, static_cast<size_t>(width_)));
  n_added_ = 0;
  return out;
}

}  // namespace cellserve::server::embeddings
