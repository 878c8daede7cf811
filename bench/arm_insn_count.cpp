// One kernel of one table, called `reps` times over `blocks` weight blocks: the program
// bench/arm_insn_count.sh runs under qemu-aarch64 -singlestep to count the instructions our
// NEON, dotprod and i8mm kernels (and the scalar reference) execute per weight block. The
// buffers are always sized and filled for kMaxBlocks, so two runs that differ only in `blocks`
// differ only in the kernel's own work, and their difference in instructions is its cost.
// Usage: arm_insn_count ISA TYPE vec|tile|packed BLOCKS REPS
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/kernel_table.h"

using namespace cellserve::engine;

namespace {

constexpr int64_t kMaxBlocks = 64;

int fail(const std::string& why) {
  std::fprintf(stderr, "arm_insn_count: %s\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return fail("usage: arm_insn_count ISA TYPE vec|tile|packed BLOCKS REPS");
  const auto table = kernels::kernels_for_isa(argv[1]);
  if (!table.ok()) return fail(table.status().message());
  const auto type = ggml_type_from_name(argv[2]);
  if (!type) return fail(std::string("unknown type ") + argv[2]);
  const std::string mode = argv[3];
  const int64_t blocks = std::atoll(argv[4]);
  const int reps = std::atoi(argv[5]);
  if (blocks < 1 || blocks > kMaxBlocks || reps < 1) return fail("BLOCKS in [1, 64], REPS >= 1");
  const kernels::WeightKernels& k = (*table)->for_weight(*type);
  if (!k.supported || k.vec_dot == nullptr) return fail("the table has no kernel for this type");

  const int64_t n_max = kMaxBlocks * ggml_block_size(*type);
  const int64_t n = blocks * ggml_block_size(*type);
  const int rows = mode == "vec" ? 1 : mode == "tile" ? k.tile_rows : kernels::kPackedRows;
  const int cols = mode == "vec" ? 1 : mode == "tile" ? k.tile_cols : kernels::kPackedMaxCols;
  if (mode == "tile" && k.tile_dot == nullptr) return fail("the table has no tile kernel for this type");
  if (mode == "packed" && k.packed_dot == nullptr) return fail("the table has no packed kernel for this type");

  // Weights: random bytes (scales included: the integer work, which is what is counted, does not
  // depend on their values).
  std::mt19937 rng(7);
  const size_t w_row = ggml_row_size(*type, n_max);
  std::vector<uint8_t> w(w_row * rows);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::vector<float> x(static_cast<size_t>(n_max) * cols);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  const size_t a_row = ggml_row_size(k.activation_type, n_max);
  std::vector<uint8_t> a(a_row * cols);
  for (int c = 0; c < cols; ++c)
    (*table)->converter(k.activation_type)(x.data() + c * n_max, a.data() + c * a_row, n_max);
  std::vector<int32_t> sums(static_cast<size_t>(kMaxBlocks * 8) * cols);
  if (k.activation_type == GgmlType::Q8_0) {
    for (int c = 0; c < cols; ++c)
      kernels::activation_block_sums(a.data() + c * a_row, n_max, sums.data() + c * kMaxBlocks * 8);
  }
  std::vector<uint8_t> packed;
  if (mode == "packed") {
    packed.resize(static_cast<size_t>(k.packed_block_bytes) * kMaxBlocks);
    k.pack(n_max, w.data(), w_row, packed.data());
  }

  std::vector<float> y(static_cast<size_t>(rows) * cols);
  float sink = 0;
  for (int r = 0; r < reps; ++r) {
    if (mode == "vec") {
      sink += k.vec_dot(n, w.data(), a.data());
    } else if (mode == "tile") {
      k.tile_dot(n, w.data(), w_row, a.data(), a_row, y.data(), rows);
      sink += y[0];
    } else {
      k.packed_dot(n, packed.data(), a.data(), a_row, sums.data(), kMaxBlocks * 8, cols, y.data(), rows);
      sink += y[0];
    }
  }
  std::printf("%s %s %s rows=%d cols=%d blocks=%lld reps=%d sink=%g\n", argv[1], argv[2], mode.c_str(), rows, cols,
              static_cast<long long>(blocks), reps, static_cast<double>(sink));
  return 0;
}
