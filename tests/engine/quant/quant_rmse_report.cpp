// quant_rmse_report: prints markdown tables of quantization error for every type cellserve
// can encode, plus how closely our reference encoders reproduce llama-quantize's files.
//
//   quant_rmse_report [testdata_dir]
//
// Sections: (1) random N(0,1) data; (2) the trained stories260K F32 weights; (3) for each
// quantized testdata model: per type, decoded-vs-master relative RMSE and the fraction of
// blocks our quantize_row reproduces byte for byte from the F32 master.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/quant/quantize.h"
#include "tests/engine/quant/quant_test_util.h"
#include "tests/engine/quant/quant_testdata_util.h"

namespace cellserve::testing {
namespace {

using engine::GgmlType;

const GgmlType kTypes[] = {GgmlType::F16,    GgmlType::BF16,   GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q5_1,
                           GgmlType::Q5_K,   GgmlType::Q5_0,   GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::Q4_0,
                           GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::Q8_K};

struct Error {
  double rmse = 0, rel = 0, max_abs = 0;
};

Error measure(GgmlType type, const std::vector<float>& x) {
  const auto y = round_trip(type, x);
  Error e;
  e.rmse = rmse(x.data(), y.data(), x.size());
  e.rel = e.rmse / rms(x.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) e.max_abs = std::max(e.max_abs, static_cast<double>(std::fabs(x[i] - y[i])));
  return e;
}

void report_random() {
  const auto normal = normal_values(256 * 1024, 1);
  const auto uniform = uniform_values(256 * 1024, 2, -1.0f, 1.0f);
  std::printf("### Random data (262,144 values each)\n\n");
  std::printf("| type | bits/weight | RMSE N(0,1) | max abs err N(0,1) | RMSE U(-1,1) |\n|---|---:|---:|---:|---:|\n");
  for (GgmlType t : kTypes) {
    const Error n = measure(t, normal), u = measure(t, uniform);
    std::printf("| %s | %.4g | %.6f | %.5f | %.6f |\n", std::string(engine::ggml_type_name(t)).c_str(),
                bits_per_weight(t), n.rmse, n.max_abs, u.rmse);
  }
  std::printf("\n");
}

// All 2-D F32 weights of stories260K concatenated (rows of 64 or 172 cannot hold a 256-block,
// so blocks may straddle rows here; the per-block error statistics are what we measure).
void report_stories(const std::string& dir) {
  auto file = engine::GgufFile::open(dir + "/models/stories260K.gguf");
  if (!file.ok()) {
    std::printf("(stories260K.gguf not available: %s)\n\n", file.status().to_string().c_str());
    return;
  }
  std::vector<float> all;
  for (const auto& info : file->tensors()) {
    if (info.shape.n_dims < 2 || info.type != GgmlType::F32) continue;
    const auto v = file->view(info);
    const size_t n = static_cast<size_t>(info.shape.elements());
    const size_t at = all.size();
    all.resize(at + n);
    std::memcpy(all.data() + at, v.data.data(), n * sizeof(float));
  }
  all.resize(all.size() / 256 * 256);
  std::printf("### stories260K (trained) weights: %zu values of its 2-D F32 tensors, rms %.5f\n\n", all.size(),
              rms(all.data(), all.size()));
  std::printf("| type | bits/weight | RMSE | relative RMSE |\n|---|---:|---:|---:|\n");
  for (GgmlType t : kTypes) {
    const Error e = measure(t, all);
    std::printf("| %s | %.4g | %.6f | %.5f |\n", std::string(engine::ggml_type_name(t)).c_str(), bits_per_weight(t),
                e.rmse, e.rel);
  }
  std::printf("\n");
}

void report_equivalence(const std::string& dir) {
  std::printf("### llama.cpp equivalence on shared/testdata (llama-quantize output vs our code)\n\n");
  std::printf(
      "| file | type | tensors | max rel RMSE vs F32 master | blocks byte-identical after re-quantizing the master "
      "|\n");
  std::printf("|---|---|---:|---:|---:|\n");
  for (const auto& m : testdata_quantized_models()) {
    auto quant = engine::GgufFile::open(dir + "/" + m.file);
    auto master = engine::GgufFile::open(dir + "/" + m.master);
    if (!quant.ok() || !master.ok()) {
      std::printf("| %s | (unreadable) | | | |\n", m.file.c_str());
      continue;
    }
    std::string error;
    const auto cmp = compare_with_master(*quant, *master, &error);
    if (!error.empty()) std::printf("| %s | error: %s | | | |\n", m.file.c_str(), error.c_str());
    struct Agg {
      int tensors = 0;
      double max_rel = 0;
      int64_t blocks = 0, same = 0;
    };
    std::map<std::string, Agg> by_type;
    for (const auto& c : cmp) {
      if (c.type == GgmlType::F32) continue;
      Agg& a = by_type[std::string(engine::ggml_type_name(c.type))];
      ++a.tensors;
      a.max_rel = std::max(a.max_rel, c.rel_rmse());
      a.blocks += c.blocks;
      a.same += c.blocks_identical;
    }
    for (const auto& [type, a] : by_type) {
      std::printf("| %s | %s | %d | %.3e | %lld / %lld (%.4f%%) |\n", m.file.c_str(), type.c_str(), a.tensors,
                  a.max_rel, static_cast<long long>(a.same), static_cast<long long>(a.blocks),
                  a.blocks ? 100.0 * static_cast<double>(a.same) / static_cast<double>(a.blocks) : 0.0);
    }
  }
  std::printf("\n");
}

}  // namespace
}  // namespace cellserve::testing

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  if (dir.empty()) {
    const char* env = std::getenv("CELLSERVE_TESTDATA");
    dir = env != nullptr && *env != 0 ? env : CELLSERVE_TESTDATA_DIR;
  }
  cellserve::testing::report_random();
  if (std::filesystem::exists(dir + "/models")) {
    cellserve::testing::report_stories(dir);
    cellserve::testing::report_equivalence(dir);
  } else {
    std::printf("(testdata not found at %s: real-tensor sections skipped)\n", dir.c_str());
  }
  return 0;
}
