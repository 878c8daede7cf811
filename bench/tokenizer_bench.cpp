// Tokenizer throughput with the real Qwen2/Qwen3 vocabulary (shared/testdata/tokenizer/ggml-vocab-qwen2.gguf):
// a ~7,000-token prompt of English prose and source code, tokenized as a server would (no special
// parsing), plus vocabulary loading and detokenization.
//
//   ninja -C build tokenizer_bench && build/bench/tokenizer_bench
//
// Reports tokens/s ("tokens" counter, a rate). Skips when testdata is absent (set CELLSERVE_TESTDATA).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using cellserve::engine::GgufFile;
using cellserve::engine::tokenizer::Tokenizer;

std::string vocab_path() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("CELLSERVE_TESTDATA"); env != nullptr && *env != 0) dir = env;
#ifdef CELLSERVE_TESTDATA_DIR
  else
    dir = CELLSERVE_TESTDATA_DIR;
#endif
  return (dir / "tokenizer" / "ggml-vocab-qwen2.gguf").string();
}

// One section of prose and one of code; `i` varies names and numbers so sections are not identical.
std::string section(int i) {
  const std::string n = std::to_string(i);
  return "Section " + n +
         ". The scheduler keeps a queue of pending requests and admits a new one whenever the KV cache "
         "has room for its prompt. Each step, it gathers one token from every running sequence, runs a "
         "single batched forward pass, and samples the next tokens; sequences that reach an end-of-turn "
         "token or their length limit release their cache blocks. In practice, prefill dominates short "
         "chats, while long generations are bound by memory bandwidth: every decoded token reads all of "
         "the weights once (about " +
         n +
         ".5 GB for a 7B model at 4-bit quantization).\n\n"
         "```cpp\n"
         "// Returns the index of the largest logit (ties: lowest id).\n"
         "int32_t argmax_" +
         n +
         "(std::span<const float> logits) {\n"
         "  int32_t best = 0;\n"
         "  for (size_t i = 1; i < logits.size(); ++i) {\n"
         "    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);\n"
         "  }\n"
         "  return best;  // e.g. " +
         n +
         "42\n"
         "}\n"
         "```\n\n"
         "```python\n"
         "def top_k(probs, k=" +
         n +
         "):\n"
         "    \"\"\"Keep the k most likely tokens and renormalise.\"\"\"\n"
         "    idx = sorted(range(len(probs)), key=lambda j: -probs[j])[:k]\n"
         "    total = sum(probs[j] for j in idx)\n"
         "    return {j: probs[j] / total for j in idx}\n"
         "```\n\n";
}

struct Fixture {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string prompt;
  size_t n_tokens = 0;
};

// Loads once; nullptr when the vocabulary is missing.
const Fixture* fixture() {
  static const std::unique_ptr<Fixture> f = []() -> std::unique_ptr<Fixture> {
    auto file = GgufFile::open(vocab_path());
    if (!file.ok()) return nullptr;
    auto tok = Tokenizer::from_gguf(*file);
    if (!tok.ok()) return nullptr;
    auto fx = std::make_unique<Fixture>();
    fx->file = std::make_unique<GgufFile>(std::move(file).value());
    fx->tokenizer = std::make_unique<Tokenizer>(std::move(tok).value());
    for (int i = 1; fx->n_tokens < 7000; ++i) {
      fx->prompt += section(i);
      fx->n_tokens = fx->tokenizer->tokenize(fx->prompt, false, false).size();
    }
    return fx;
  }();
  return f.get();
}

void BM_TokenizePrompt(benchmark::State& state) {
  const Fixture* f = fixture();
  if (f == nullptr) {
    state.SkipWithError(("cannot load " + vocab_path()).c_str());
    return;
  }
  size_t n = 0;
  for (auto _ : state) {
    auto ids = f->tokenizer->tokenize(f->prompt, /*add_special=*/false, /*parse_special=*/false);
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["prompt_tokens"] = static_cast<double>(n);
  state.counters["prompt_bytes"] = static_cast<double>(f->prompt.size());
}
BENCHMARK(BM_TokenizePrompt)->Unit(benchmark::kMillisecond);

void BM_PreTokenizeOnly(benchmark::State& state) {
  const Fixture* f = fixture();
  if (f == nullptr) {
    state.SkipWithError("vocabulary missing");
    return;
  }
  for (auto _ : state) {
    auto words = cellserve::engine::tokenizer::pre_tokenize_text(cellserve::engine::tokenizer::PreTokenizerKind::Qwen2,
                                                                 f->prompt);
    benchmark::DoNotOptimize(words.data());
  }
  state.counters["tokens"] =
      benchmark::Counter(static_cast<double>(f->n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PreTokenizeOnly)->Unit(benchmark::kMillisecond);

void BM_Detokenize(benchmark::State& state) {
  const Fixture* f = fixture();
  if (f == nullptr) {
    state.SkipWithError("vocabulary missing");
    return;
  }
  const auto ids = f->tokenizer->tokenize(f->prompt, false, false);
  for (auto _ : state) {
    auto text = f->tokenizer->detokenize(ids, false, false);
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["tokens"] =
      benchmark::Counter(static_cast<double>(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Detokenize)->Unit(benchmark::kMillisecond);

void BM_LoadVocabulary(benchmark::State& state) {
  const Fixture* f = fixture();
  if (f == nullptr) {
    state.SkipWithError("vocabulary missing");
    return;
  }
  for (auto _ : state) {
    auto tok = Tokenizer::from_gguf(*f->file);
    benchmark::DoNotOptimize(tok.ok());
  }
}
BENCHMARK(BM_LoadVocabulary)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
