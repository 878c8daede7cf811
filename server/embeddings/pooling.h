// Pooling: how an input's per-token hidden states become one embedding vector, and the L2
// normalisation every vector gets. Pure functions, safe from any thread.
//
// The names and numbers are llama.cpp's (`--pooling`, the GGUF key `<arch>.pooling_type`:
// 0 none, 1 mean, 2 cls, 3 last, 4 rank). docs/embeddings.md describes them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::server::embeddings {

enum class Pooling {
  None,  // one vector per token
  Mean,  // the mean of the input's token vectors
  Cls,   // the first token's vector
  Last,  // the last token's vector (the one that has attended to the whole input, in a causal model)
};

// "none", "mean", "cls", "last".
std::string_view pooling_name(Pooling p);
// The Pooling named `name` (as pooling_name()); nullopt for any other text.
std::optional<Pooling> pooling_from_name(std::string_view name);

// The pooling the GGUF asks for: `<general.architecture>.pooling_type`, nullopt when the key is
// absent. Unimplemented for 4 (rank: a reranker's score, not an embedding); InvalidArgument for
// any other number or a key that is not an integer.
Result<std::optional<Pooling>> pooling_from_gguf(const engine::GgufFile& file);

// The pooling to use and where it came from ("--pooling", "the GGUF's <key>", "the default for
// a decoder model"): `flag` (a pooling_name(), "" when not given) wins, then the GGUF's key, then
// Last. InvalidArgument naming --pooling for an unknown name; pooling_from_gguf()'s errors.
struct PoolingChoice {
  Pooling pooling = Pooling::Last;
  std::string source;
};
Result<PoolingChoice> choose_pooling(std::string_view flag, const engine::GgufFile& file);

// Scales `v` to unit Euclidean length (llama.cpp's embd_normalize = 2), summing in double. A zero
// vector stays zero.
void l2_normalize(std::span<float> v);

// Whether the token at `pos` of an input of `n_tokens` tokens contributes to its embedding.
bool pooling_reads(Pooling p, int64_t pos, int64_t n_tokens);

// One input's embedding, built from its token rows in position order: give add() every row
// pooling_reads() selects, then take finish(). Memory: one row for Mean/Cls/Last; every row for
// None.
class Pooler {
 public:
  Pooler(Pooling p, int64_t width);
  // Takes the next selected row (`width` floats), in position order.
  void add(std::span<const float> row);
  // The L2-normalised result, [n_rows()][width]: one row, or one per token for None. The pooler
  // is empty afterwards. REQUIRES: at least one add().
  std::vector<float> finish();
  int64_t n_rows() const { return pooling_ == Pooling::None ? n_added_ : 1; }

 private:
  Pooling pooling_;
  int64_t width_;
  int64_t n_added_ = 0;
  std::vector<double> sum_;  // Mean: the running sum, in double so long inputs lose nothing
  std::vector<float> rows_;  // None: every row; Cls / Last: the row kept
};

}  // namespace cellserve::server::embeddings
