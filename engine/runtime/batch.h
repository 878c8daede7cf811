// A batch of tokens for one forward pass, possibly from several independent sequences.
#pragma once

#include <cstdint>
#include <vector>

namespace cellserve::engine {

using TokenId = int32_t;
using SeqId = int32_t;

// Token i of the batch is `tokens[i]` at position `pos[i]` of sequence `seq[i]`; when
// `output[i]` is set, its logits are computed and kept. Tokens of one sequence must appear in
// increasing position order; sequences may interleave freely.
struct Batch {
  std::vector<TokenId> tokens;
  std::vector<int32_t> pos;
  std::vector<SeqId> seq;
  std::vector<uint8_t> output;

  void add(TokenId token, int32_t position, SeqId sequence, bool want_logits) {
    tokens.push_back(token);
    pos.push_back(position);
    seq.push_back(sequence);
    output.push_back(want_logits ? 1 : 0);
  }
  void clear() {
    tokens.clear();
    pos.clear();
    seq.clear();
    output.clear();
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace cellserve::engine
