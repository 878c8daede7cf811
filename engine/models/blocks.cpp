#include "engine/models/blocks.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/quant/quantize.h"
#include "engine/runtime/work_claims.h"

namespace cellserve::engine {

void rms_norm(const float* x, std::span<const float> w, float* y, int64_t n_rows, int64_t n, float eps,
              ThreadPool& pool) {
  const kernels::RmsNormFn norm = kernels::active_kernels().rms_norm;
  const float* wd = w.empty() ? nullptr : w.data();
  parallel_for_work(pool, n_rows, n_rows * n,
                    [&](int64_t r0, int64_t r1) { norm(x + r0 * n, wd, y + r0 * n, r1 - r0, n, eps); });
}

namespace {

// Scratch of the matmul in progress (converted activations, their block sums). One buffer per
// calling thread and element type, grown as needed, so the forward pass does not allocate (and
// page-fault) a fresh one per projection.
template <typename T>
T* thread_buffer(size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Bytes of weights a prefill chunk keeps hot in L1/L2 while every token tile of the chunk passes
// over them.
constexpr size_t kWeightBlockBytes = 24 * 1024;
// Tokens per prefill chunk: their converted activations (a few KB each, 256-768 KB in all for
// qwen3-0.6b's BF16 rows) stay in L2 while the chunks of one token block pass over every weight
// row (see for_each_prefill_chunk).
constexpr int64_t kTokenBlock = 128;
// Decode of plain (unpacked) rows: rows per chunk handed to a thread. Long runs of rows let the hardware prefetchers
// stream: on 2 threads (qwen3-0.6b Q4_0 tg128, alternating runs) 64-row chunks gave 86 tok/s
// where 512-row chunks gave 111-122. But every thread needs work, so a matrix is cut into at
// least one chunk per thread (a multiple of 8 rows, the packed groups).
constexpr int64_t kDecodeChunkRowsMax = 512;
int64_t decode_chunk_rows(int64_t n_out, int n_threads) {
  const int64_t per_thread = (n_out + n_threads - 1) / n_threads;
  return std::clamp<int64_t>((per_thread + 7) / 8 * 8, 8, kDecodeChunkRowsMax);
}

// Prefill schedule: the output is cut into chunks of (units_per_chunk weight units, e.g. rows or
// packed groups) × (token_block tokens), handed out dynamically; fn(u0, u1, t0, t1) computes one.
// Inside a chunk the tokens pass over the chunk's weights while those stay in cache. The chunks
// are handed out token block by token block, so a block's activations stay in L2 while the
// weights stream past once per block; handed out weight chunk by weight chunk, all the tokens'
// activations (1-3 MB at 512 tokens) came from L3 for every chunk. On Zen 5 this and 128-token
// blocks (was 64) made pp512 of qwen3-0.6b BF16 10-20 % faster.
void for_each_prefill_chunk(ThreadPool& pool, int64_t n_units, int64_t units_per_chunk, int64_t n_tokens,
                            int64_t token_block, const std::function<void(int64_t, int64_t, int64_t, int64_t)>& fn) {
  const int64_t unit_chunks = (n_units + units_per_chunk - 1) / units_per_chunk;
  const int64_t token_chunks = (n_tokens + token_block - 1) / token_block;
  pool.parallel_chunks(unit_chunks * token_chunks, [&](int64_t chunk) {
    const int64_t u0 = chunk % unit_chunks * units_per_chunk;
    const int64_t t0 = chunk / unit_chunks * token_block;
    fn(u0, std::min(n_units, u0 + units_per_chunk), t0, std::min(n_tokens, t0 + token_block));
  });
}

// Bytes of one packed group of w (kPackedRows rows, every input).
size_t packed_group_bytes(const TensorView& w, const kernels::WeightKernels& k) {
  return static_cast<size_t>(w.shape.ne[0] / ggml_block_size(w.type) * k.packed_block_bytes);
}

// Rows packed in groups of kPackedRows (TensorView::packed): each kernel call yields 8 rows for
// up to kPackedMaxCols tokens. Per (row, token) the arithmetic does not depend on the grouping
// of tokens, so decode, prefill and multi-sequence batches agree bit for bit.
void matmul_packed(const TensorView& w, const kernels::WeightKernels& k, const kernels::FromFloatFn convert,
                   const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  constexpr int64_t kRows = kernels::kPackedRows;
  const int64_t n_in = w.shape.ne[0];
  const int64_t n_out = w.shape.ne[1];
  const int64_t n_blocks = n_in / 32;  // for Q4_0's activation sums (Q8_0 blocks)
  const size_t act_row = ggml_row_size(k.activation_type, n_in);
  const size_t group_bytes = packed_group_bytes(w, k);
  std::byte* act = thread_buffer<std::byte>(act_row * static_cast<size_t>(n_tokens));
  int32_t* sums = thread_buffer<int32_t>(static_cast<size_t>(n_blocks * n_tokens));
  const std::byte* packed = w.packed.get();
  const int64_t groups = n_out / kRows;

  pool.parallel_for(n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::byte* a = act + static_cast<size_t>(t) * act_row;
      convert(x + t * n_in, a, n_in);
      if (k.activation_type == GgmlType::Q8_0) kernels::activation_block_sums(a, n_in, sums + t * n_blocks);
    }
  });
  // Chunks of (weight groups × tokens); the tokens pass over a chunk kPackedMaxCols at a time,
  // two groups a call where the table has a pair kernel (an even number of groups per chunk).
  const int64_t step = k.packed_dot_pair != nullptr ? 2 : 1;
  const int64_t groups_per_chunk =
      std::max<int64_t>(step, static_cast<int64_t>(kWeightBlockBytes / group_bytes) / step * step);
  for_each_prefill_chunk(
      pool, groups, groups_per_chunk, n_tokens, kTokenBlock, [&](int64_t g0, int64_t g1, int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; t += kernels::kPackedMaxCols) {
          const int cols = static_cast<int>(std::min<int64_t>(kernels::kPackedMaxCols, t1 - t));
          int64_t g = g0;
          for (; step == 2 && g + 1 < g1; g += 2) {
            k.packed_dot_pair(n_in, packed + static_cast<size_t>(g) * group_bytes,
                              act + static_cast<size_t>(t) * act_row, act_row, sums + t * n_blocks, n_blocks, cols,
                              y + t * n_out + g * kRows, n_out);
          }
          for (; g < g1; ++g) {
            k.packed_dot(n_in, packed + static_cast<size_t>(g) * group_bytes, act + static_cast<size_t>(t) * act_row,
                         act_row, sums + t * n_blocks, n_blocks, cols, y + t * n_out + g * kRows, n_out);
          }
        }
      });
}

// Whether w's product with n_tokens rows runs as decode: packed groups take up to
// kPackedMaxCols tokens a call, plain rows one.
bool decodes(const TensorView& w, const kernels::KernelTable& table, int64_t n_tokens) {
  const kernels::WeightKernels& k = table.for_weight(w.type);
  const bool packed = w.packed != nullptr && k.packed_dot != nullptr;
  return packed ? n_tokens <= kernels::kPackedMaxCols : n_tokens == 1;
}

// The converted activations of a decode matmul, as the packed kernels take them.
struct DecodeActivations {
  const std::byte* act;
  size_t act_row;
  const int32_t* sums;  // Q4_0's per-block sums
  int64_t n_blocks;
  int64_t n_tokens;
};

// o's packed groups [g0, g1) against the activations.
void packed_dot_groups(const MatmulOut& o, int64_t g0, int64_t g1, const DecodeActivations& a) {
  const TensorView& w = *o.w;
  const int64_t n_in = w.shape.ne[0];
  const kernels::WeightKernels& k = kernels::active_kernels().for_weight(w.type);
  const size_t group_bytes = packed_group_bytes(w, k);
  for (int64_t g = g0; g < g1; ++g) {
    k.packed_dot(n_in, w.packed.get() + static_cast<size_t>(g) * group_bytes, a.act, a.act_row, a.sums, a.n_blocks,
                 static_cast<int>(a.n_tokens), o.y + g * kernels::kPackedRows, w.shape.ne[1]);
  }
}

// Packed decode: the groups of all the weights, numbered one after another, are claimed by the
// threads in runs that shrink as they run out (WorkClaims: at most 64 groups, 512 rows; at least 4).
// On two threads one claims from the front and the other from the back, so both stream long runs
// and they meet within a few groups of each other. With fixed 512-row runs, a matrix of 1024 rows
// was one run per thread, and whichever was slower kept the other waiting: per perf the worker
// waited 12.7 % of its decode samples and the caller 6 % (qwen3-0.6b Q4_K_M). Alternating runs,
// share of the weights' read bandwidth before / after: qwen3-0.6b Q4_0 75.3 / 78.8 % and 71.1 /
// 80.3 %, Q4_K_M 74.6 / 78.2 %, qwen35-0.8b Q4_0 66.5 / 73.7 % and 67.8 / 74.3 %. On more
// threads (a phone's 8 cores of two speeds) the same claims come from the front: equal runs per
// thread made the prime cores wait for the others. Each group's values are the kernel's, so they
// do not depend on who computed it.
void decode_claimed(std::span<const MatmulOut> outs, const DecodeActivations& a, ThreadPool& pool) {
  // Claims of 64 groups at most. At least 4 on two threads (measured above: long streams); on more
  // at least 1, whose tail is 8 rows: a claim of 4 groups ending on a slow core left the others
  // idle for up to 12 % of a 1,024-row matrix (WorkClaims' test simulates the 2 + 6 cores).
  const int64_t min_claim = pool.active() == 2 ? 4 : 1;
  constexpr int64_t kMaxClaim = 64;
  // The weights' groups numbered one after another: weight i's start at first_group[i].
  int64_t* first_group = thread_buffer<int64_t>(outs.size() + 1);
  first_group[0] = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    first_group[i + 1] = first_group[i] + outs[i].w->shape.ne[1] / kernels::kPackedRows;
  }
  const int64_t total = first_group[outs.size()];
  const auto compute = [&](int64_t v0, int64_t v1) {
    for (size_t i = 0; i < outs.size(); ++i) {
      packed_dot_groups(outs[i], std::max(v0, first_group[i]) - first_group[i],
                        std::min(v1, first_group[i + 1]) - first_group[i], a);
    }
  };
  WorkClaims claims(total, min_claim, kMaxClaim);
  pool.run([&](int ith, int nth) {
    for (WorkClaims::Range r = claims.claim(ith, nth); !r.empty(); r = claims.claim(ith, nth)) compute(r.begin, r.end);
  });
}

// Decode of weights that take the same activations (decode_together): the activations are
// converted once; packed weights' groups are claimed as one range (decode_claimed), plain rows are
// cut into runs of decode_chunk_rows (long runs let the hardware prefetchers stream); either way
// all the work is handed out in one job, so the weights of a
// layer's Q, K and V cost one barrier instead of three and a slow thread holds up one job less.
// Each (row, token) is the kernel's, so the values equal separate products bit for bit.
void matmul_decode(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool& pool) {
  const auto& table = kernels::active_kernels();
  const TensorView& w0 = *outs[0].w;
  const kernels::WeightKernels& k0 = table.for_weight(w0.type);
  const bool packed = w0.packed != nullptr && k0.packed_dot != nullptr;
  const int64_t n_in = w0.shape.ne[0];
  const int64_t n_blocks = n_in / 32;  // for Q4_0's activation sums (Q8_0 blocks)
  const size_t act_row = ggml_row_size(k0.activation_type, n_in);
  std::byte* act = thread_buffer<std::byte>(act_row * static_cast<size_t>(n_tokens));
  int32_t* sums = thread_buffer<int32_t>(static_cast<size_t>(n_blocks * n_tokens));
  const kernels::FromFloatFn convert = table.converter(k0.activation_type);
  for (int64_t t = 0; t < n_tokens; ++t) {
    std::byte* a = act + static_cast<size_t>(t) * act_row;
    convert(x + t * n_in, a, n_in);
    if (packed && k0.activation_type == GgmlType::Q8_0) kernels::activation_block_sums(a, n_in, sums + t * n_blocks);
  }
  const DecodeActivations acts{act, act_row, sums, n_blocks, n_tokens};
  if (packed) {
    decode_claimed(outs, acts, pool);
    return;
  }

  // The plain rows' runs: weight i's rows [r0, r1).
  struct Run {
    size_t out;
    int64_t r0, r1;
  };
  const auto runs_of = [&](const MatmulOut& o) {
    const int64_t n_out = o.w->shape.ne[1];
    const int64_t rows = decode_chunk_rows(n_out, pool.size());
    return std::pair{rows, (n_out + rows - 1) / rows};
  };
  int64_t n_runs = 0;
  for (const MatmulOut& o : outs) n_runs += runs_of(o).second;
  Run* runs = thread_buffer<Run>(static_cast<size_t>(n_runs));
  Run* next = runs;
  for (size_t i = 0; i < outs.size(); ++i) {
    const int64_t n_out = outs[i].w->shape.ne[1];
    const int64_t rows = runs_of(outs[i]).first;
    for (int64_t r = 0; r < n_out; r += rows) *next++ = Run{i, r, std::min(n_out, r + rows)};
  }

  pool.parallel_chunks(n_runs, [&](int64_t chunk) {
    const Run& run = runs[chunk];
    const TensorView& w = *outs[run.out].w;
    float* y = outs[run.out].y;
    const kernels::WeightKernels& k = table.for_weight(w.type);
    const size_t w_row = ggml_row_size(w.type, n_in);
    const std::byte* rows = w.data.data();
    for (int64_t r = run.r0; r < run.r1; ++r) y[r] = k.vec_dot(n_in, rows + static_cast<size_t>(r) * w_row, act);
  });
}

}  // namespace

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  const auto& table = kernels::active_kernels();
  const kernels::WeightKernels& k = table.for_weight(w.type);
  const MatmulOut out{&w, y};
  if (decodes(w, table, n_tokens)) {
    matmul_decode({&out, 1}, x, n_tokens, pool);
    return;
  }
  if (w.packed != nullptr && k.packed_dot != nullptr) {
    matmul_packed(w, k, table.converter(k.activation_type), x, n_tokens, y, pool);
    return;
  }
  const int64_t n_in = w.shape.ne[0];
  const int64_t n_out = w.shape.ne[1];
  const size_t act_row = ggml_row_size(k.activation_type, n_in);
  const size_t w_row = ggml_row_size(w.type, n_in);
  std::byte* act = thread_buffer<std::byte>(act_row * static_cast<size_t>(n_tokens));
  const kernels::FromFloatFn convert = table.converter(k.activation_type);
  const std::byte* wdata = w.data.data();

  pool.parallel_for(n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) convert(x + t * n_in, act + static_cast<size_t>(t) * act_row, n_in);
  });
  // Prefill: chunks of (weight rows × tokens). Inside a chunk, each tile of tokens passes over the
  // chunk's weight rows while those stay in cache; tiles compute tile_rows × tile_cols dot
  // products per weight block unpacked; the rows past the last whole tile go to tile_dot_rows where
  // the table has it, else to vec_dot, as do the tokens past the last whole tile (bit-identical
  // either way).
  const int tr = k.tile_dot != nullptr ? k.tile_rows : 1;
  const int tc = k.tile_dot != nullptr ? k.tile_cols : 1;
  const int64_t rows_per_chunk = std::max<int64_t>(tr, static_cast<int64_t>(kWeightBlockBytes / w_row) / tr * tr);
  const int64_t token_block = std::max<int64_t>(tc, kTokenBlock / tc * tc);
  for_each_prefill_chunk(
      pool, n_out, rows_per_chunk, n_tokens, token_block, [&](int64_t r0, int64_t r1, int64_t t0, int64_t t1) {
        int64_t t = t0;
        if (k.tile_dot != nullptr) {
          for (; t + tc <= t1; t += tc) {
            const std::byte* a = act + static_cast<size_t>(t) * act_row;
            int64_t r = r0;
            for (; r + tr <= r1; r += tr) {
              k.tile_dot(n_in, wdata + static_cast<size_t>(r) * w_row, w_row, a, act_row, y + t * n_out + r, n_out);
            }
            if (r < r1 && k.tile_dot_rows != nullptr) {
              k.tile_dot_rows(static_cast<int>(r1 - r), n_in, wdata + static_cast<size_t>(r) * w_row, w_row, a, act_row,
                              y + t * n_out + r, n_out);
              r = r1;
            }
            for (; r < r1; ++r) {
              for (int64_t c = 0; c < tc; ++c) {
                y[(t + c) * n_out + r] = k.vec_dot(n_in, wdata + static_cast<size_t>(r) * w_row, a + c * act_row);
              }
            }
          }
        }
        for (; t < t1; ++t) {
          const std::byte* a = act + static_cast<size_t>(t) * act_row;
          for (int64_t r = r0; r < r1; ++r)
            y[t * n_out + r] = k.vec_dot(n_in, wdata + static_cast<size_t>(r) * w_row, a);
        }
      });
}

void matmul_shared_input(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool& pool) {
  if (outs.empty()) return;
  const auto& table = kernels::active_kernels();
  const TensorView& w0 = *outs[0].w;
  const auto packed = [&](const TensorView& w) {
    return w.packed != nullptr && table.for_weight(w.type).packed_dot != nullptr;
  };
  // One decode job where every weight decodes on the same activations (e.g. Q4_K and Q6_K
  // rows both take Q8_K), separate matmuls otherwise.
  const auto together = [&](const MatmulOut& o) {
    return decodes(*o.w, table, n_tokens) && o.w->shape.ne[0] == w0.shape.ne[0] && packed(*o.w) == packed(w0) &&
           table.for_weight(o.w->type).activation_type == table.for_weight(w0.type).activation_type;
  };
  if (std::all_of(outs.begin(), outs.end(), together)) {
    matmul_decode(outs, x, n_tokens, pool);
    return;
  }
  for (const MatmulOut& o : outs) matmul(*o.w, x, n_tokens, o.y, pool);
}

void add_bias(float* y, std::span<const float> b, int64_t n_tokens) {
  const auto n = static_cast<int64_t>(b.size());
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < n; ++i) y[t * n + i] += b[static_cast<size_t>(i)];
  }
}

void get_embedding_row(const TensorView& embd, int32_t token, float* out) {
  dequantize_row(embd.type, embd.row(token).data(), out, embd.shape.ne[0]);
}

namespace {

// ggml's YaRN helpers (ggml-cpu ops.cpp / ggml.c), kept in float like the original.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) / (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::fmax(0.001f, high - low);
  return 1.0f - std::fmin(1.0f, std::fmax(0.0f, y));
}

// For Mrope/Imrope: whether rotated pair `pair` takes its angle from the text position (one of
// the first three streams) rather than the fourth stream (ggml_mrope_cache_init's sectors).
bool multi_section_uses_pos(const RopeParams& p, int pair) {
  if (p.type != RopeType::Mrope && p.type != RopeType::Imrope) return true;
  const auto& s = p.sections;
  const int sect_dims = s[0] + s[1] + s[2] + s[3];
  if (sect_dims <= 0) return true;
  const int sector = pair % sect_dims;
  if (p.type == RopeType::Imrope) {
    return (sector % 3 == 1 && sector < 3 * s[1]) || (sector % 3 == 2 && sector < 3 * s[2]) ||
           (sector % 3 == 0 && sector < 3 * s[0]);
  }
  return sector < s[0] + s[1] + s[2];
}

// Fills cache[i0], cache[i0+1] with cos/sin for each rotated pair at position `pos`, advancing
// theta multiplicatively exactly as ggml_rope_cache_init does.
void rope_cache(float pos, const RopeParams& p, const float corr[2], float* cache) {
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  float theta = pos;
  for (int i0 = 0; i0 < p.n_rot; i0 += 2) {
    const float ff = p.freq_factors.empty() ? 1.0f : p.freq_factors[static_cast<size_t>(i0 / 2)];
    // A multi-section pair on the fourth stream (position 0 for text) keeps angle 0.
    const float theta_extrap = (multi_section_uses_pos(p, i0 / 2) ? theta : 0.0f) / ff;
    const float theta_interp = p.freq_scale * theta_extrap;
    float t = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float ramp_mix = yarn_ramp(corr[0], corr[1], i0) * p.ext_factor;
      t = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cache[i0] = std::cos(t) * mscale;
    cache[i0 + 1] = std::sin(t) * mscale;
    theta *= theta_scale;
  }
}

}  // namespace

void rope_angles(const int32_t* pos, int64_t n_tokens, const RopeParams& p, float* angles, ThreadPool& pool) {
  float corr[2] = {0.0f, 0.0f};
  if (p.ext_factor != 0.0f) {
    const float start = std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base));
    const float end = std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base));
    corr[0] = std::fmax(0.0f, start);
    corr[1] = std::fmin(static_cast<float>(p.n_rot - 1), end);
  }
  parallel_for_work(pool, n_tokens, n_tokens * p.n_rot, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) rope_cache(static_cast<float>(pos[t]), p, corr, angles + t * p.n_rot);
  });
}

void rope(float* x, const float* angles, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const RopeParams& p,
          ThreadPool& pool) {
  const int64_t half = p.n_rot / 2;
  parallel_for_work(pool, n_tokens, n_tokens * n_heads * head_dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* cache = angles + t * p.n_rot;
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim;
        for (int64_t i0 = 0; i0 < p.n_rot; i0 += 2) {
          const float c = cache[i0];
          const float s = cache[i0 + 1];
          const int64_t a = p.type == RopeType::Norm ? i0 : i0 / 2;
          const int64_t b = p.type == RopeType::Norm ? i0 + 1 : i0 / 2 + half;
          const float x0 = v[a];
          const float x1 = v[b];
          v[a] = x0 * c - x1 * s;
          v[b] = x0 * s + x1 * c;
        }
      }
    }
  });
}

void store_kv(KvCache& kv, int64_t kv_layer, const float* k, const float* v, const std::vector<int32_t>& cells) {
  const auto& table = kernels::active_kernels();
  const kernels::FromFloatFn convert = table.converter(kv.type());
  const KvCacheShape& s = kv.shape();
  for (size_t t = 0; t < cells.size(); ++t) {
    for (int64_t h = 0; h < s.n_kv_head; ++h) {
      convert(k + (static_cast<int64_t>(t) * s.n_kv_head + h) * s.head_dim_k, kv.key(kv_layer, cells[t], h),
              s.head_dim_k);
      convert(v + (static_cast<int64_t>(t) * s.n_kv_head + h) * s.head_dim_v, kv.value(kv_layer, cells[t], h),
              s.head_dim_v);
    }
  }
}

namespace {

// Query rows one attention item aims to take: tokens whose visible cells extend the previous
// token's (the tokens of one prompt chunk) share an item, and the keys and values they have in
// common are then read once for all their query heads instead of once per token. That is what
// makes a long prompt's attention arithmetic- rather than cache-bound.
constexpr int64_t kTileQueryRows = 32;

// Tokens [first, end) of one item: each token's visible cells start with the previous token's.
struct TokenTile {
  int64_t first = 0;
  int64_t end = 0;
};

std::vector<TokenTile> token_tiles(const std::vector<std::vector<int32_t>>& visible_by_token, int64_t max_tokens,
                                   ThreadPool& pool) {
  const auto n_tokens = static_cast<int64_t>(visible_by_token.size());
  std::vector<char> extends(static_cast<size_t>(n_tokens), 0);
  pool.parallel_for(n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = std::max<int64_t>(t0, 1); t < t1; ++t) {
      const std::vector<int32_t>& prev = visible_by_token[static_cast<size_t>(t - 1)];
      const std::vector<int32_t>& cur = visible_by_token[static_cast<size_t>(t)];
      extends[static_cast<size_t>(t)] = cur.size() >= prev.size() && std::equal(prev.begin(), prev.end(), cur.begin());
    }
  });
  std::vector<TokenTile> tiles;
  for (int64_t t = 0; t < n_tokens;) {
    TokenTile tile{t, t + 1};
    while (tile.end < n_tokens && tile.end - tile.first < max_tokens && extends[static_cast<size_t>(tile.end)]) {
      ++tile.end;
    }
    tiles.push_back(tile);
    t = tile.end;
  }
  return tiles;
}

// Attention with the table's F16 kernels. One item is a tile of tokens and a KV head: the query
// heads of that KV head in all the tile's tokens are scored over their common cells in one pass
// over the keys, then each token over the cells only it sees. Every score, softmax and weighted
// sum has a fixed order (kernel_table.h), and a weighted sum split at the common cells equals the
// whole, so a token's result does not depend on its tile or batch.
void attention_f16(const AttentionArgs& a, const KvCache& kv, const std::vector<std::vector<int32_t>>& visible_by_token,
                   const kernels::KernelTable& table, ThreadPool& pool) {
  const KvCacheShape& s = kv.shape();
  const int64_t group = a.n_head / s.n_kv_head;
  const std::vector<TokenTile> tiles =
      token_tiles(visible_by_token, std::max<int64_t>(1, kTileQueryRows / group), pool);
  const auto n_tiles = static_cast<int64_t>(tiles.size());
  pool.parallel_chunks(n_tiles * s.n_kv_head, [&](int64_t i) {
    thread_local std::vector<float> q16;
    thread_local std::vector<float> scores;
    thread_local std::vector<uint16_t> probs;
    thread_local std::vector<float> out;
    thread_local std::vector<const uint16_t*> keys;
    thread_local std::vector<const uint16_t*> values;
    // KV-head-major order, as in the generic path: neighbouring items read the same head's cells.
    const int64_t kvh = i / n_tiles;
    const TokenTile& tile = tiles[static_cast<size_t>(i % n_tiles)];
    const int64_t n_t = tile.end - tile.first;
    const auto rows = static_cast<int>(n_t * group);
    const auto visible = [&](int64_t k) -> const std::vector<int32_t>& {
      return visible_by_token[static_cast<size_t>(tile.first + k)];
    };
    // The last token sees every cell of the tile; the others see a prefix of its cells.
    const std::vector<int32_t>& all = visible(n_t - 1);
    const auto n_all = static_cast<int64_t>(all.size());
    const auto n_common = static_cast<int64_t>(visible(0).size());
    keys.resize(all.size());
    values.resize(all.size());
    for (size_t j = 0; j < all.size(); ++j) {
      keys[j] = reinterpret_cast<const uint16_t*>(kv.key(a.kv_layer, all[j], kvh));
      values[j] = reinterpret_cast<const uint16_t*>(kv.value(a.kv_layer, all[j], kvh));
    }
    // ggml dots F16 keys with the query converted to F16: the same values, kept as floats.
    const int64_t q_len = group * s.head_dim_k;
    q16.resize(static_cast<size_t>(rows * s.head_dim_k));
    for (int64_t k = 0; k < n_t; ++k) {
      const float* q = a.q + ((tile.first + k) * a.n_head + kvh * group) * s.head_dim_k;
      float* dst = q16.data() + k * q_len;
      table.round_f16(q, dst, q_len);
    }
    scores.resize(static_cast<size_t>(rows * n_all));
    probs.resize(scores.size());
    table.attn_scores_f16(s.head_dim_k, rows, q16.data(), s.head_dim_k, n_common, keys.data(), scores.data(), n_all);
    for (int64_t k = 1; k < n_t; ++k) {
      const auto n_k = static_cast<int64_t>(visible(k).size());
      table.attn_scores_f16(s.head_dim_k, static_cast<int>(group), q16.data() + k * q_len, s.head_dim_k, n_k - n_common,
                            keys.data() + n_common, scores.data() + k * group * n_all + n_common, n_all);
    }
    for (int r = 0; r < rows; ++r) {
      const auto n_r = static_cast<int64_t>(visible(r / group).size());
      table.attn_softmax_f16(n_r, a.scale, scores.data() + r * n_all, probs.data() + r * n_all);
    }
    out.assign(static_cast<size_t>(rows * s.head_dim_v), 0.0f);
    table.attn_values_f16(s.head_dim_v, rows, probs.data(), n_all, n_common, values.data(), out.data(), s.head_dim_v);
    for (int64_t k = 1; k < n_t; ++k) {
      const auto n_k = static_cast<int64_t>(visible(k).size());
      table.attn_values_f16(s.head_dim_v, static_cast<int>(group), probs.data() + k * group * n_all + n_common, n_all,
                            n_k - n_common, values.data() + n_common, out.data() + k * group * s.head_dim_v,
                            s.head_dim_v);
    }
    const int64_t out_len = group * s.head_dim_v;
    for (int64_t k = 0; k < n_t; ++k) {
      std::copy_n(out.data() + k * out_len, out_len,
                  a.out + ((tile.first + k) * a.n_head + kvh * group) * s.head_dim_v);
    }
  });
}

}  // namespace

void attention(const AttentionArgs& a, const KvCache& kv, ThreadPool& pool) {
  const auto& table = kernels::active_kernels();
  const kernels::WeightKernels& kdot = table.for_weight(kv.type());
  const kernels::FromFloatFn q_convert = table.converter(kdot.activation_type);
  const KvCacheShape& s = kv.shape();
  const int64_t group = a.n_head / s.n_kv_head;
  const int64_t n_scan = kv.scan_end();
  const bool f16_values = kv.type() == GgmlType::F16;
  // The cells each token sees, found once per token (every head of it sees the same ones), in
  // position order whatever cells they landed in: the sums then do not depend on the cache
  // layout (interleaved sequences, shared prefixes), so a sequence gets the same tokens alone,
  // batched with others, or reusing a cached prefix.
  // (A named reference: the lambdas below run on pool threads, where the thread_local name
  // itself would mean each thread's own, empty, vector.)
  thread_local std::vector<std::vector<int32_t>> visible_storage;
  std::vector<std::vector<int32_t>>& visible_by_token = visible_storage;
  visible_by_token.resize(static_cast<size_t>(a.n_tokens));
  pool.parallel_for(a.n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::vector<int32_t>& visible = visible_by_token[static_cast<size_t>(t)];
      visible.clear();
      for (int64_t c = 0; c < n_scan; ++c) {
        if (kv.visible(c, a.seq[t], a.pos[t])) visible.push_back(static_cast<int32_t>(c));
      }
      const auto by_pos = [&](int32_t x, int32_t y) { return kv.cell_pos(x) < kv.cell_pos(y); };
      if (!std::is_sorted(visible.begin(), visible.end(), by_pos)) std::sort(visible.begin(), visible.end(), by_pos);
    }
  });
  if (f16_values && table.attn_scores_f16 != nullptr && table.attn_softmax_f16 != nullptr &&
      table.attn_values_f16 != nullptr && s.head_dim_k % 8 == 0 && s.head_dim_v % 8 == 0) {
    attention_f16(a, kv, visible_by_token, table, pool);
    return;
  }
  pool.parallel_chunks(a.n_tokens * a.n_head, [&](int64_t i) {
    thread_local std::vector<std::byte> q_conv;
    thread_local std::vector<float> scores;
    thread_local std::vector<float> vrow;
    q_conv.resize(ggml_row_size(kdot.activation_type, s.head_dim_k));
    vrow.resize(static_cast<size_t>(s.head_dim_v));
    // KV-head-major order: consecutive items (on one thread or on the others) read the same
    // head's keys and values, which then come from cache instead of memory — a long prompt's
    // K/V rows of one head are a few MB, all heads' far more.
    const int64_t per_kv_head = a.n_tokens * group;
    const int64_t kvh = i / per_kv_head;
    const int64_t t = i % per_kv_head / group;
    const int64_t h = kvh * group + i % group;
    q_convert(a.q + (t * a.n_head + h) * s.head_dim_k, q_conv.data(), s.head_dim_k);
    scores.clear();
    const std::vector<int32_t>& visible = visible_by_token[static_cast<size_t>(t)];
    float max = -INFINITY;
    for (const int32_t c : visible) {
      const float score = kdot.vec_dot(s.head_dim_k, kv.key(a.kv_layer, c, kvh), q_conv.data()) * a.scale;
      scores.push_back(score);
      max = std::fmax(max, score);
    }
    double sum = 0.0;
    for (float& sc : scores) {
      sc = std::exp(sc - max);
      sum += sc;
    }
    const float inv = static_cast<float>(1.0 / sum);
    float* out = a.out + (t * a.n_head + h) * s.head_dim_v;
    std::fill(out, out + s.head_dim_v, 0.0f);
    for (size_t j = 0; j < visible.size(); ++j) {
      const float p = scores[j] * inv;
      const void* v = kv.value(a.kv_layer, visible[j], kvh);
      if (f16_values) {
        // ggml multiplies V by the probabilities converted to V's format (F16).
        table.axpy_f16(s.head_dim_v, fp16_to_fp32(fp32_to_fp16(p)), static_cast<const uint16_t*>(v), out);
      } else {
        dequantize_row(kv.type(), v, vrow.data(), s.head_dim_v);
        for (int64_t d = 0; d < s.head_dim_v; ++d) out[d] += p * vrow[static_cast<size_t>(d)];
      }
    }
  });
}

void swiglu(const float* gate, const float* up, float* h, int64_t n, ThreadPool& pool) {
  const kernels::SwigluFn kernel = kernels::active_kernels().swiglu;
  constexpr int64_t kChunk = 4096;  // below this, a parallel job costs more than it saves
  if (n <= kChunk) {
    kernel(n, gate, up, h);
    return;
  }
  pool.parallel_chunks((n + kChunk - 1) / kChunk, [&](int64_t c) {
    const int64_t i0 = c * kChunk;
    kernel(std::min(kChunk, n - i0), gate + i0, up + i0, h + i0);
  });
}

void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool) {
  parallel_for_work(pool, n, n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) x[i] += y[i];
  });
}

}  // namespace cellserve::engine
