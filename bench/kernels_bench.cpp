// Per-kernel microbenchmarks for every kernel table this host can run (the reference table and
// each SIMD one available_kernels() returns):
//   vec_dot/<isa>/<type>     decode shape: a 1024 x 3072 weight matrix times one activation row,
//                            one vec_dot per row; bytes_per_second = weight bytes streamed.
//   tile_dot/<isa>/<type>    prefill shape: 256 weight rows x 64 tokens (K = 3072) in the table's
//                            full register tiles; FLOPS = 2 * rows * K * tokens per second.
//   packed_dot/<isa>/<type>/cols:C   packed weight groups (8 interleaved rows, the layout the
//                            engine repacks Q4_0, Q8_0, Q4_K and Q6_K into): C = 1 is decode over
//                            all 1024 rows (bytes_per_second = packed weight bytes), C = 4 is
//                            prefill over 256 rows x 64 tokens, 4 tokens a call, as tile_dot
//                            (FLOPS, comparable with tile_dot's).
//   packed_dot_pair/<isa>/<type>/cols:C   the same, two adjacent groups a call, where the
//                            table has a pair kernel.
//   from_float/<isa>/<type>  activation conversion of 16384 floats; bytes_per_second = F32 input.
//   attention/<isa>/rows:R/head_dim:D   R query rows of head size D (128: qwen3, 256: qwen3.5)
//                            over 4096 F16 cells (a long prompt's KV head, 2-4 MB of keys and
//                            values, larger than L2): scores, softmax and weighted sum of values;
//                            FLOPS = 4 * R * cells * D per second. R = 2 is one token of
//                            qwen3-0.6b's 2 query heads per KV head, R = 32 the tile of tokens
//                            the prefill takes together (16 for qwen3, 8 for qwen3.5).
//   delta_net/<isa>/tokens:N  the chunked Gated DeltaNet of one qwen3.5 head (d_k = d_v = 128,
//                            chunks of 64) over N prompt tokens; FLOPS counts the chunked form's
//                            multiply-adds (2 per): per chunk of n, 2 n^2 d_k (K Kᵀ, Q Kᵀ), 4 n d_v d_k
//                            (S0 K, S0 Q, the state update), n^2 d_v (corrections and outputs).
//
//   ninja -C build kernels_bench && build/bench/kernels_bench --benchmark_filter=/avx2/
//
// Inputs are random (normal weights quantized with the reference quantizers), built once per
// weight type outside the timed loops. Rates are per CPU second of the benchmark thread (Google
// Benchmark's default), which a busy machine disturbs less than wall time. See docs/bench.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/quant/ggml_type.h"
#include "engine/quant/quantize.h"

namespace {

using cellserve::engine::GgmlType;
namespace kernels = cellserve::engine::kernels;
namespace engine = cellserve::engine;

constexpr int64_t kRows = 1024;       // weight rows of the decode benchmark
constexpr int64_t kK = 3072;          // elements per row: a multiple of every block size (256)
constexpr int64_t kTileRows = 256;    // weight rows of the prefill benchmark (the first kTileRows rows)
constexpr int64_t kTileTokens = 64;   // activation rows of the prefill benchmark
constexpr int64_t kConvertN = 16384;  // floats per converter call

constexpr GgmlType kWeightTypes[] = {
    GgmlType::F16,    GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
    GgmlType::IQ4_NL, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS,
};

std::string upper_name(GgmlType t) {
  std::string s(engine::ggml_type_name(t));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// kRows x kK random weights stored as `type`, quantized once per process (the K-quant and IQ
// quantizers search scales and take a moment).
const std::vector<std::byte>& weights(GgmlType type) {
  static std::map<GgmlType, std::vector<std::byte>> cache;
  auto it = cache.find(type);
  if (it != cache.end()) return it->second;
  const size_t row_bytes = engine::ggml_row_size(type, kK);
  std::vector<std::byte> w(row_bytes * kRows);
  const std::vector<float> src = random_floats(kRows * kK, 1);
  for (int64_t r = 0; r < kRows; ++r) {
    engine::quantize_row(type, src.data() + r * kK, w.data() + static_cast<size_t>(r) * row_bytes, kK);
  }
  return cache.emplace(type, std::move(w)).first->second;
}

// `n_rows` activation rows of kK elements converted by `table` for weights of type `type`.
std::vector<std::byte> activations(const kernels::KernelTable& table, GgmlType type, int64_t n_rows) {
  const GgmlType act = table.for_weight(type).activation_type;
  const size_t row_bytes = engine::ggml_row_size(act, kK);
  const std::vector<float> src = random_floats(n_rows * kK, 2);
  std::vector<std::byte> a(row_bytes * static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    table.converter(act)(src.data() + r * kK, a.data() + static_cast<size_t>(r) * row_bytes, kK);
  }
  return a;
}

void bench_vec_dot(benchmark::State& state, const kernels::KernelTable* table, GgmlType type) {
  const kernels::WeightKernels& k = table->for_weight(type);
  const std::vector<std::byte>& w = weights(type);
  const std::vector<std::byte> a = activations(*table, type, 1);
  const size_t row_bytes = engine::ggml_row_size(type, kK);
  std::vector<float> y(kRows);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) y[static_cast<size_t>(r)] = k.vec_dot(kK, w.data() + r * row_bytes, a.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w.size()));
}

void bench_tile_dot(benchmark::State& state, const kernels::KernelTable* table, GgmlType type) {
  const kernels::WeightKernels& k = table->for_weight(type);
  const std::vector<std::byte>& w = weights(type);
  const std::vector<std::byte> a = activations(*table, type, kTileTokens);
  const size_t w_stride = engine::ggml_row_size(type, kK);
  const size_t a_stride = engine::ggml_row_size(k.activation_type, kK);
  // Full tiles only: the shape is rounded down to the table's tile size.
  const int64_t rows = kTileRows / k.tile_rows * k.tile_rows;
  const int64_t tokens = kTileTokens / k.tile_cols * k.tile_cols;
  std::vector<float> y(static_cast<size_t>(kTileRows * kTileTokens));
  for (auto _ : state) {
    for (int64_t c = 0; c < tokens; c += k.tile_cols) {
      for (int64_t r = 0; r < rows; r += k.tile_rows) {
        k.tile_dot(kK, w.data() + r * w_stride, w_stride, a.data() + c * a_stride, a_stride,
                   y.data() + c * kTileRows + r, kTileRows);
      }
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops_per_iteration = 2.0 * static_cast<double>(rows) * kK * static_cast<double>(tokens);
  state.counters["FLOPS"] =
      benchmark::Counter(flops_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void bench_packed_dot(benchmark::State& state, const kernels::KernelTable* table, GgmlType type, bool pairs) {
  const int cols = static_cast<int>(state.range(0));
  const kernels::WeightKernels& k = table->for_weight(type);
  const std::vector<std::byte>& w = weights(type);
  const size_t w_stride = engine::ggml_row_size(type, kK);
  const auto group_bytes = static_cast<size_t>(kK / engine::ggml_block_size(type) * k.packed_block_bytes);
  const int64_t groups = kRows / kernels::kPackedRows;
  std::vector<std::byte> packed(group_bytes * static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    k.pack(kK, w.data() + static_cast<size_t>(g * kernels::kPackedRows) * w_stride, w_stride,
           packed.data() + static_cast<size_t>(g) * group_bytes);
  }
  const std::vector<std::byte> a = activations(*table, type, kTileTokens);
  const size_t a_stride = engine::ggml_row_size(k.activation_type, kK);
  const int64_t n_blocks = kK / 32;
  std::vector<int32_t> sums(static_cast<size_t>(n_blocks * kTileTokens));
  if (k.activation_type == GgmlType::Q8_0) {
    for (int64_t t = 0; t < kTileTokens; ++t) {
      kernels::activation_block_sums(a.data() + static_cast<size_t>(t) * a_stride, kK, sums.data() + t * n_blocks);
    }
  }
  const int64_t used_groups = cols == 1 ? groups : kTileRows / kernels::kPackedRows;
  const int64_t tokens = cols == 1 ? 1 : kTileTokens;
  std::vector<float> y(static_cast<size_t>(kRows * kTileTokens));
  const kernels::PackedDotFn pair = pairs ? k.packed_dot_pair : nullptr;
  for (auto _ : state) {
    for (int64_t t = 0; t < tokens; t += cols) {
      int64_t g = 0;
      for (; pair != nullptr && g + 1 < used_groups; g += 2) {
        pair(kK, packed.data() + static_cast<size_t>(g) * group_bytes, a.data() + static_cast<size_t>(t) * a_stride,
             a_stride, sums.data() + t * n_blocks, n_blocks, cols, y.data() + t * kRows + g * kernels::kPackedRows,
             kRows);
      }
      for (; g < used_groups; ++g) {
        k.packed_dot(kK, packed.data() + static_cast<size_t>(g) * group_bytes,
                     a.data() + static_cast<size_t>(t) * a_stride, a_stride, sums.data() + t * n_blocks, n_blocks, cols,
                     y.data() + t * kRows + g * kernels::kPackedRows, kRows);
      }
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  if (cols == 1) {
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(packed.size()));
  } else {
    const double flops =
        2.0 * static_cast<double>(used_groups * kernels::kPackedRows) * kK * static_cast<double>(tokens);
    state.counters["FLOPS"] =
        benchmark::Counter(flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  }
}

void bench_from_float(benchmark::State& state, kernels::FromFloatFn convert, GgmlType act) {
  const std::vector<float> src = random_floats(kConvertN, 3);
  std::vector<std::byte> dst(engine::ggml_row_size(act, kConvertN));
  for (auto _ : state) {
    convert(src.data(), dst.data(), kConvertN);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kConvertN * static_cast<int64_t>(sizeof(float)));
}

constexpr int64_t kAttnCells = 4096;

void bench_attention(benchmark::State& state, const kernels::KernelTable* table) {
  const auto rows = static_cast<int>(state.range(0));
  const int64_t kAttnHeadDim = state.range(1);
  std::vector<uint16_t> kv(static_cast<size_t>(2 * kAttnCells * kAttnHeadDim));
  const std::vector<float> src = random_floats(static_cast<int64_t>(kv.size()), 4);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = cellserve::fp32_to_fp16(src[i]);
  std::vector<const uint16_t*> keys, values;
  for (int64_t j = 0; j < kAttnCells; ++j) {
    keys.push_back(kv.data() + 2 * j * kAttnHeadDim);  // interleaved, as a cache's cells
    values.push_back(kv.data() + (2 * j + 1) * kAttnHeadDim);
  }
  std::vector<float> q = random_floats(rows * kAttnHeadDim, 5);
  for (float& x : q) x = cellserve::fp16_to_fp32(cellserve::fp32_to_fp16(x));
  std::vector<float> scores(static_cast<size_t>(rows * kAttnCells));
  std::vector<uint16_t> probs(scores.size());
  std::vector<float> out(static_cast<size_t>(rows * kAttnHeadDim));
  for (auto _ : state) {
    table->attn_scores_f16(kAttnHeadDim, rows, q.data(), kAttnHeadDim, kAttnCells, keys.data(), scores.data(),
                           kAttnCells);
    for (int r = 0; r < rows; ++r) {
      table->attn_softmax_f16(kAttnCells, 0.0884f, scores.data() + r * kAttnCells, probs.data() + r * kAttnCells);
    }
    std::fill(out.begin(), out.end(), 0.0f);
    table->attn_values_f16(kAttnHeadDim, rows, probs.data(), kAttnCells, kAttnCells, values.data(), out.data(),
                           kAttnHeadDim);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double flops_per_iteration = 4.0 * rows * kAttnCells * kAttnHeadDim;
  state.counters["FLOPS"] =
      benchmark::Counter(flops_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void bench_delta_net(benchmark::State& state, const kernels::KernelTable* table) {
  const int64_t n = state.range(0);
  constexpr int64_t kD = 128;
  constexpr int64_t kChunk = 64;
  std::vector<float> q = random_floats(n * kD, 6), k = random_floats(n * kD, 7), v = random_floats(n * kD, 8);
  const auto normalise = [](std::vector<float>& x) {
    for (size_t r = 0; r < x.size(); r += kD) {
      double sum = 0;
      for (int64_t i = 0; i < kD; ++i)
        sum += static_cast<double>(x[r + static_cast<size_t>(i)]) * x[r + static_cast<size_t>(i)];
      for (int64_t i = 0; i < kD; ++i) x[r + static_cast<size_t>(i)] /= static_cast<float>(std::sqrt(sum) + 1e-6);
    }
  };
  normalise(q);
  normalise(k);
  std::vector<float> g(static_cast<size_t>(n), -0.05f), beta(static_cast<size_t>(n), 0.5f);
  std::vector<float> out(static_cast<size_t>(n * kD)), s(static_cast<size_t>(kD * kD));
  kernels::reference::DeltaNetHeadArgs a;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.g = g.data(), a.beta = beta.data();
  a.q_stride = a.k_stride = a.v_stride = kD;
  a.n_tokens = n, a.d_k = kD, a.d_v = kD, a.scale = 0.0884f, a.out = out.data(), a.out_stride = kD;
  for (auto _ : state) {
    std::fill(s.begin(), s.end(), 0.0f);
    table->delta_net_chunked(a, s.data(), kChunk);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  double macs = 0;
  for (int64_t t0 = 0; t0 < n; t0 += kChunk) {
    const double c = static_cast<double>(std::min(kChunk, n - t0));
    macs += 2 * c * c * kD + 4 * c * kD * kD + c * c * kD;
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2 * macs * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void register_all() {
  for (const kernels::KernelTable* table : kernels::available_kernels()) {
    const std::string isa(table->isa);
    for (const GgmlType type : kWeightTypes) {
      const kernels::WeightKernels& k = table->for_weight(type);
      if (!k.supported || k.vec_dot == nullptr || !engine::can_quantize(type)) continue;
      if (table->converter(k.activation_type) == nullptr) continue;
      const std::string suffix = "/" + isa + "/" + upper_name(type);
      benchmark::RegisterBenchmark(("vec_dot" + suffix).c_str(), bench_vec_dot, table, type)
          ->Unit(benchmark::kMicrosecond);
      if (k.tile_dot != nullptr && k.tile_rows >= 1 && k.tile_cols >= 1 && k.tile_rows <= kTileRows &&
          k.tile_cols <= kTileTokens) {
        benchmark::RegisterBenchmark(("tile_dot" + suffix).c_str(), bench_tile_dot, table, type)
            ->Unit(benchmark::kMicrosecond);
      }
      if (k.packed_dot != nullptr && k.pack != nullptr) {
        benchmark::RegisterBenchmark(("packed_dot" + suffix).c_str(), bench_packed_dot, table, type, false)
            ->ArgName("cols")
            ->Arg(1)
            ->Arg(kernels::kPackedMaxCols)
            ->Unit(benchmark::kMicrosecond);
      }
      if (k.packed_dot_pair != nullptr) {
        benchmark::RegisterBenchmark(("packed_dot_pair" + suffix).c_str(), bench_packed_dot, table, type, true)
            ->ArgName("cols")
            ->Arg(1)
            ->Arg(kernels::kPackedMaxCols)
            ->Unit(benchmark::kMicrosecond);
      }
    }
    if (table->attn_scores_f16 != nullptr && table->attn_softmax_f16 != nullptr && table->attn_values_f16 != nullptr) {
      benchmark::RegisterBenchmark(("attention/" + isa).c_str(), bench_attention, table)
          ->ArgNames({"rows", "head_dim"})
          ->ArgsProduct({{2, 4, 32}, {128, 256}})
          ->Unit(benchmark::kMicrosecond);
    }
    if (table->delta_net_chunked != nullptr) {
      benchmark::RegisterBenchmark(("delta_net/" + isa).c_str(), bench_delta_net, table)
          ->ArgName("tokens")
          ->Arg(256)
          ->Unit(benchmark::kMicrosecond);
    }
    for (size_t i = 0; i < table->from_float.size(); ++i) {
      const auto act = engine::ggml_type_from_u32(static_cast<uint32_t>(i));
      if (!act || table->from_float[i] == nullptr || kConvertN % engine::ggml_block_size(*act) != 0) continue;
      benchmark::RegisterBenchmark(("from_float/" + isa + "/" + upper_name(*act)).c_str(), bench_from_float,
                                   table->from_float[i], *act)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  // A shorter default minimum time (0.2 s instead of 0.5 s) keeps one table's run well under a
  // minute; a --benchmark_min_time given on the command line comes later and wins.
  std::vector<char*> args(argv, argv + argc);
  std::string min_time = "--benchmark_min_time=0.2";
  args.insert(args.begin() + 1, min_time.data());
  int n_args = static_cast<int>(args.size());
  benchmark::Initialize(&n_args, args.data());
  if (benchmark::ReportUnrecognizedArguments(n_args, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
