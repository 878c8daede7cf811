// Every model and vocabulary file in shared/testdata opens, and its census matches manifest.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "tests/support/testdata.h"

namespace cellserve::engine {
namespace {

namespace json = boost::json;

json::value read_manifest() {
  std::ifstream in(::cellserve::testing::testdata_path("manifest.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

TEST(GgufTestdata, EveryModelOpensAndMatchesTheManifest) {
  CS_REQUIRE_TESTDATA();
  const json::value manifest = read_manifest();
  int checked = 0;
  int in_manifest = 0;
  const auto dir = ::cellserve::testing::testdata_dir();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    auto f = GgufFile::open(entry.path().string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->version(), 3u);
    EXPECT_TRUE(f->get_string("general.architecture").has_value());
    ++checked;

    // The byte size and tensor-type census recorded in manifest.json, where it lists the file.
    const std::string rel = std::filesystem::relative(entry.path(), dir).string();
    std::map<std::string, int64_t> census;
    for (const auto& t : f->tensors()) {
      std::string name(ggml_type_name(t.type));
      for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      ++census[name];
    }
    for (const auto& item : manifest.at("models").as_array()) {
      const auto& o = item.as_object();
      if (json::value_to<std::string>(o.at("file")) != rel) continue;
      ++in_manifest;
      EXPECT_EQ(json::value_to<int64_t>(o.at("bytes")), static_cast<int64_t>(f->file_size()));
      std::map<std::string, int64_t> expected;
      for (const auto& [k, v] : o.at("tensor_types").as_object()) expected[std::string(k)] = json::value_to<int64_t>(v);
      EXPECT_EQ(census, expected);
    }
  }
  EXPECT_GE(checked, 31);
  EXPECT_GE(in_manifest, 29);
}

}  // namespace
}  // namespace cellserve::engine
