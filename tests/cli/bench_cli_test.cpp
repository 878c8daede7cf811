// `cellserve bench` as a user runs it: output shapes and error handling. Timings are only
// checked to be positive (the machine running the tests may be busy).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <boost/json.hpp>

#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string bench(const std::string& model, const std::string& args) {
  return cellserve_command() + " bench -m " + testing::testdata_path("models/" + model) + " " + args;
}

TEST(BenchCli, JsonHasOneObjectPerTestAndThreadCount) {
  CS_REQUIRE_TESTDATA();
  const std::string model = "qwen3-tiny-q4_0.gguf";
  auto r = run_command(bench(model, "-p 16 -n 4 -t 1,2 -r 2 --output json 2>/dev/null"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto rows = boost::json::parse(r.out).as_array();
  ASSERT_EQ(rows.size(), 4u) << r.out;
  std::set<std::pair<std::string, int64_t>> seen;
  for (const auto& v : rows) {
    const auto& o = v.as_object();
    const std::string test(o.at("test").as_string());
    const int64_t threads = o.at("threads").to_number<int64_t>();
    seen.insert({test, threads});
    EXPECT_EQ(o.at("n_prompt").to_number<int64_t>(), test == "pp16" ? 16 : 0) << test;
    EXPECT_EQ(o.at("n_gen").to_number<int64_t>(), test == "tg4" ? 4 : 0) << test;
    EXPECT_GT(o.at("avg_ts").to_number<double>(), 0) << test;
    EXPECT_GE(o.at("stddev_ts").to_number<double>(), 0) << test;
    const auto& samples = o.at("samples_ts").as_array();
    ASSERT_EQ(samples.size(), 2u) << test;
    for (const auto& s : samples) EXPECT_GT(s.to_number<double>(), 0) << test;
    EXPECT_EQ(o.at("model_size").to_number<uint64_t>(),
              std::filesystem::file_size(testing::testdata_path("models/" + model)));
    EXPECT_GT(o.at("model_n_params").to_number<uint64_t>(), 0u);
    EXPECT_GT(o.at("peak_rss_bytes").to_number<uint64_t>(), 0u);
    EXPECT_EQ(std::string(o.at("file_type").as_string()), "Q4_0");
    EXPECT_EQ(std::string(o.at("model_type").as_string()).rfind("qwen3 ", 0), 0u) << o.at("model_type");
    EXPECT_FALSE(o.at("isa").as_string().empty());
  }
  const std::set<std::pair<std::string, int64_t>> want{{"pp16", 1}, {"pp16", 2}, {"tg4", 1}, {"tg4", 2}};
  EXPECT_EQ(seen, want);
}

TEST(BenchCli, EveryArchitectureRunsRepeatedTests) {
  CS_REQUIRE_TESTDATA();
  // qwen35 is hybrid (recurrent state): repetitions must reset it, not only the KV cache.
  for (const std::string model : {"llama-tiny-q8_0.gguf", "qwen35-tiny-q4_k_m.gguf", "stories260K.gguf"}) {
    auto r = run_command(bench(model, "-p 8,12 -n 3 -t 1 -r 2 -b 5 --output json 2>&1"));
    ASSERT_EQ(r.exit_code, 0) << model << ": " << r.out;
    const auto rows = boost::json::parse(r.out).as_array();
    ASSERT_EQ(rows.size(), 3u) << model;
    EXPECT_EQ(rows[0].at("test").as_string(), "pp8");
    EXPECT_EQ(rows[1].at("test").as_string(), "pp12");
    EXPECT_EQ(rows[2].at("test").as_string(), "tg3");
    for (const auto& v : rows) EXPECT_GT(v.at("avg_ts").to_number<double>(), 0) << model;
  }
}

TEST(BenchCli, MarkdownIsATableWithOneRowPerTest) {
  CS_REQUIRE_TESTDATA();
  auto r = run_command(bench("qwen3-tiny-q8_0.gguf", "-p 8 -n 2 -t 1 -r 1 2>/dev/null"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  const auto bars = std::count(lines[0].begin(), lines[0].end(), '|');
  EXPECT_EQ(bars, 9) << lines[0];
  for (const auto& line : lines) {
    EXPECT_EQ(line.front(), '|') << line;
    EXPECT_EQ(std::count(line.begin(), line.end(), '|'), bars) << line;
  }
  EXPECT_NE(lines[0].find("t/s"), std::string::npos);
  EXPECT_NE(lines[1].find("---:"), std::string::npos);
  EXPECT_NE(lines[2].find(" pp8 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find(" tg2 "), std::string::npos) << lines[3];
  EXPECT_NE(lines[2].find("qwen3 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" Q8_0 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" ± "), std::string::npos) << lines[2];
}

TEST(BenchCli, CsvHasAHeaderAndOneRowPerTest) {
  CS_REQUIRE_TESTDATA();
  auto r = run_command(bench("llama-tiny-q4_0.gguf", "-p 0 -n 2,3 -t 1 -r 1 --output csv 2>/dev/null"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;  // -p 0: no prompt test
  EXPECT_EQ(lines[0].rfind("model,", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(",test,avg_ts,stddev_ts,"), std::string::npos) << lines[0];
  const auto commas = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const auto& line : lines) EXPECT_EQ(std::count(line.begin(), line.end(), ','), commas) << line;
  EXPECT_NE(lines[1].find(",tg2,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(",tg3,"), std::string::npos) << lines[2];
}

// --peak: a row per dot kind and thread count before the model's, and pp rows carry their share
// of the peak for their weights (its value depends on the machine: only its presence and range).
TEST(BenchCli, PeakComesFirstAndPpRowsSayTheirShareOfIt) {
  auto alone = run_command(cellserve_command() + " bench --peak -t 1 -r 1 --output json");
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  const auto peaks = boost::json::parse(alone.out).as_array();
  ASSERT_EQ(peaks.size(), 2u) << alone.out;
  EXPECT_EQ(peaks[0].at("test").as_string(), "int8_peak");
  EXPECT_EQ(peaks[1].at("test").as_string(), "bf16_peak");
  for (const auto& p : peaks) EXPECT_GT(p.at("avg_gmacs").to_number<double>(), 0);
  CS_REQUIRE_TESTDATA();
  auto r = run_command(bench("qwen3-tiny-q8_0.gguf", "--peak -p 16 -n 2 -t 1 -r 1 --output json 2>/dev/null"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto rows = boost::json::parse(r.out).as_array();
  ASSERT_EQ(rows.size(), 4u) << r.out;
  const auto& pp = rows[2].as_object();
  EXPECT_EQ(pp.at("test").as_string(), "pp16");
  EXPECT_EQ(pp.at("peak_kind").as_string(), "int8");
  EXPECT_GT(pp.at("macs_per_token").to_number<double>(), 0);
  EXPECT_GT(pp.at("peak_share").to_number<double>(), 0);
  EXPECT_LT(pp.at("peak_share").to_number<double>(), 1);
  EXPECT_FALSE(rows[3].as_object().contains("peak_share")) << "a tg row has no share of the dot peak";
}

// -d: each test again after that many tokens in the KV cache, named as llama-bench names it.
TEST(BenchCli, DepthRunsEachTestAfterItsTokens) {
  CS_REQUIRE_TESTDATA();
  auto r = run_command(bench("qwen3-tiny-q8_0.gguf", "-p 8 -n 2 -d 0,40 -t 1 -r 1 --output json 2>/dev/null"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto rows = boost::json::parse(r.out).as_array();
  ASSERT_EQ(rows.size(), 4u) << r.out;
  const char* tests[] = {"pp8", "pp8 @ d40", "tg2", "tg2 @ d40"};
  const int64_t depths[] = {0, 40, 0, 40};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(rows[i].at("test").as_string(), tests[i]);
    EXPECT_EQ(rows[i].at("n_depth").as_int64(), depths[i]);
    EXPECT_GT(rows[i].at("avg_ts").to_number<double>(), 0);
  }
  auto md = run_command(bench("qwen3-tiny-q8_0.gguf", "-p 8 -n 0 -d 40 -t 1 -r 1 2>/dev/null"));
  ASSERT_EQ(md.exit_code, 0) << md.out;
  EXPECT_NE(md.out.find("pp8 @ d40"), std::string::npos) << md.out;
}

// --bandwidth: a row per thread count before the model's, and tg rows carry their roofline
// share (its value depends on the machine: only its presence and sign are checked).
TEST(BenchCli, BandwidthComesFirstAndTgRowsSayTheirShareOfIt) {
  auto alone = run_command(cellserve_command() + " bench --bandwidth --bandwidth-mib 16 -t 1,2 -r 2 --output json");
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  const auto bw = boost::json::parse(alone.out).as_array();
  ASSERT_EQ(bw.size(), 2u) << alone.out;
  for (const auto& v : bw) {
    EXPECT_EQ(v.at("test").as_string(), "read_bandwidth");
    EXPECT_EQ(v.at("bytes").to_number<uint64_t>(), uint64_t{16} << 20);
    EXPECT_EQ(v.at("samples_ns").as_array().size(), 2u);
    EXPECT_GT(v.at("best_gbs").to_number<double>(), 0);
    EXPECT_GE(v.at("best_gbs").to_number<double>(), v.at("avg_gbs").to_number<double>());
  }
  EXPECT_EQ(bw[0].at("threads").to_number<int64_t>(), 1);
  EXPECT_EQ(bw[1].at("threads").to_number<int64_t>(), 2);
  CS_REQUIRE_TESTDATA();
  auto r =
      run_command(bench("qwen3-tiny-q4_0.gguf", "--bandwidth --bandwidth-mib 16 -p 4 -n 2 -t 1 -r 1 --output json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto rows = boost::json::parse(r.out).as_array();
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[0].at("test").as_string(), "read_bandwidth");
  EXPECT_EQ(rows[1].at("test").as_string(), "pp4");
  EXPECT_FALSE(rows[1].as_object().contains("roofline_fraction"));
  EXPECT_EQ(rows[2].at("test").as_string(), "tg2");
  // qwen3-tiny ties its output to the embedding: a token streams every tensor.
  EXPECT_GT(rows[2].at("bytes_per_token").to_number<uint64_t>(), 0u);
  EXPECT_GT(rows[2].at("roofline_fraction").to_number<double>(), 0);
  // The weights' read rate before the repetition and after it.
  EXPECT_EQ(rows[2].at("bandwidth_samples_gbs").as_array().size(), 2u);
  auto md = run_command(bench("qwen3-tiny-q4_0.gguf", "--bandwidth --bandwidth-mib 16 -p 0 -n 2 -t 1 -r 1"));
  ASSERT_EQ(md.exit_code, 0) << md.out;
  EXPECT_NE(md.out.find("read GB/s"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("% of the weights' read bandwidth ("), std::string::npos) << md.out;
}

TEST(BenchCli, IsaSelectsTheKernelTable) {
  CS_REQUIRE_TESTDATA();
  auto r = run_command(bench("qwen3-tiny-q4_0.gguf", "-p 4 -n 0 -t 1 -r 1 --isa generic --output json 2>/dev/null"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto rows = boost::json::parse(r.out).as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("isa").as_string(), "generic");
}

TEST(BenchCli, BadArgumentsGiveOneLineAndExitOne) {
  auto expect_one_line_error = [](const std::string& command) {
    auto r = run_command(command + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << command << ": " << r.out;
    EXPECT_NE(r.out.find("cellserve bench: error: "), std::string::npos) << command << ": " << r.out;
  };
  expect_one_line_error(cellserve_command() + " bench -m /nonexistent.gguf -p 4 -n 1");
  expect_one_line_error(cellserve_command() + " bench -p 4");
  expect_one_line_error(cellserve_command() + " bench --bandwidth --bandwidth-mib 0");
  expect_one_line_error(cellserve_command() + " bench --bandwidth --bandwidth-mib 999999");   // > RAM / 4
  expect_one_line_error(cellserve_command() + " bench --bandwidth --bandwidth-mib 1 -t 64");  // < 64 KiB each
  if (testing::testdata_dir().empty()) return;
  for (const std::string args :
       {"-p abc", "-p 8,,16", "-p -1", "-p 99999999", "-n 1x", "-t 0", "-t 1,2000", "-r 0", "-r 2,3", "-b 0",
        "-p 0 -n 0", "-d -1", "-d 1x", "--kv-type q4_0", "--kv-type nope", "--output xml", "--isa nonexistent-isa"}) {
    expect_one_line_error(bench("stories260K.gguf", args));
  }
}

}  // namespace
}  // namespace cellserve
