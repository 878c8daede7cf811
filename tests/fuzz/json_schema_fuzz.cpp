// libFuzzer target: the JSON Schema compiler and the constrained-decoding steps after it.
// Input: a JSON Schema text, optionally followed by a NUL byte and "choice" bytes. The schema is
// compiled with OutputConstraint::from_schema; when it compiles, each choice byte is one decoding
// step over the synthetic vocabulary of fuzz_vocab.h: mask the logits, pick one of the tokens
// the mask kept (choice % kept), accept it. Beyond memory errors the target checks the
// sequence's contract: a token the mask kept is accepted, and before an end token the mask never
// keeps nothing.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <boost/json/parse.hpp>

#include "engine/grammar/output_constraint.h"
#include "tests/fuzz/fuzz_vocab.h"

namespace {

constexpr size_t kMaxSteps = 32;
constexpr int64_t kBudget = 64;  // tokens left at the first step; each step uses one

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellserve::engine::grammar;
  static const auto index = build_token_index(cellserve::fuzz::fuzz_tokenizer());
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view schema_text = input.substr(0, nul);
  const std::string_view choices = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = 64;  // as parse_json_object() for request bodies
  const boost::json::value schema = boost::json::parse(schema_text, ec, {}, opts);
  if (ec) return 0;
  auto constraint = OutputConstraint::from_schema(schema);
  if (!constraint.ok()) return 0;

  ConstrainedSequence seq(*constraint, index);
  const int32_t n_vocab = cellserve::fuzz::fuzz_tokenizer().n_vocab();
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::vector<int32_t> kept;
  for (size_t step = 0; step < choices.size() && step < kMaxSteps; ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    // A mask-time work limit is a clean refusal, not a finding: stop this input there.
    if (!seq.mask_logits(logits, kBudget - static_cast<int64_t>(step)).ok()) return 0;
    kept.clear();
    for (int32_t id = 0; id < n_vocab; ++id) {
      if (std::isfinite(logits[static_cast<size_t>(id)])) kept.push_back(id);
    }
    if (kept.empty()) {
      std::fprintf(stderr, "mask kept no token at step %zu\n", step);
      std::abort();
    }
    const int32_t token = kept[static_cast<unsigned char>(choices[step]) % kept.size()];
    const cellserve::Status s = seq.accept(token);
    if (!s.ok()) {
      std::fprintf(stderr, "token %d kept by the mask was refused at step %zu: %s\n", token, step,
                   s.to_string().c_str());
      std::abort();
    }
    if (cellserve::fuzz::fuzz_tokenizer().is_eog(token)) break;  // nothing may follow an end token
  }
  return 0;
}
