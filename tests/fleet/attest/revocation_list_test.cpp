#include "fleet/attest/revocation_list.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace cellserve::fleet::attest {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("cs-attest-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = (path_ / name).string();
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    return file;
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// The shape of Google's list (android-key-attestation's test status.json), serials included.
constexpr std::string_view kGoogleShaped = R"({
  "entries": {
    "2c8cdddfd5e03bfc": {"status": "REVOKED", "reason": "KEY_COMPROMISE"},
    "cc66e9a93713b6e643b26c15879786f7": {"status": "SUSPENDED", "reason": "KEY_COMPROMISE",
                                          "comment": "Entry for testing only", "expires": "2030-01-01"},
    "00000abc": {"status": "REVOKED"}
  }
})";

TEST(RevocationList, ParsesGoogleFormatAndLooksUpAnySpelling) {
  auto list = RevocationList::parse(kGoogleShaped);
  ASSERT_TRUE(list.ok()) << list.status().to_string();
  EXPECT_EQ(list->size(), 3u);
  const RevocationEntry* e = list->find("CC66E9A93713B6E643B26C15879786F7");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->status, "SUSPENDED");
  EXPECT_EQ(e->reason, "KEY_COMPROMISE");
  EXPECT_NE(list->find("002c8cdddfd5e03bfc"), nullptr) << "leading zeros are not part of a serial";
  ASSERT_NE(list->find("abc"), nullptr) << "keys are normalised too";
  EXPECT_EQ(list->find("abc")->reason, "");
  EXPECT_EQ(list->find("abd"), nullptr);
  EXPECT_EQ(list->find("not hex"), nullptr);
  EXPECT_EQ(list->find(""), nullptr);
}

TEST(RevocationList, NormalisesSerials) {
  EXPECT_EQ(normalize_serial("00Ab"), "ab");
  EXPECT_EQ(normalize_serial("000"), "0");
  EXPECT_EQ(normalize_serial(""), std::nullopt);
  EXPECT_EQ(normalize_serial("12g"), std::nullopt);
  EXPECT_EQ(normalize_serial("-1"), std::nullopt);
}

TEST(RevocationList, RefusesMalformedJsonAndWrongTypes) {
  for (const std::string_view bad : {
           R"({"entries": )",                                              // truncated
           R"([])",                                                        // not an object
           R"({"other": {}})",                                             // no entries
           R"({"entries": []})",                                           // entries not an object
           R"({"entries": {"xyz": {"status": "REVOKED"}}})",               // key not hex
           R"({"entries": {"ab": "REVOKED"}})",                            // entry not an object
           R"({"entries": {"ab": {"status": 1}}})",                        // status not a string
           R"({"entries": {"ab": {"status": "REVOKED", "reason": []}}})",  // reason not a string
       }) {
    auto list = RevocationList::parse(bad);
    EXPECT_FALSE(list.ok()) << bad;
    if (!list.ok()) {
      EXPECT_EQ(list.status().code(), StatusCode::InvalidArgument) << bad;
    }
  }
  EXPECT_TRUE(RevocationList::parse(R"({"entries": {}})").ok());
}

TEST(RevocationList, LoadsAFileAndRefusesAnOversizedOne) {
  TempDir dir;
  auto list = RevocationList::load(dir.write("status.json", std::string(kGoogleShaped)));
  ASSERT_TRUE(list.ok()) << list.status().to_string();
  EXPECT_EQ(list->size(), 3u);

  auto missing = RevocationList::load(dir.write("x", "") + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);

  const std::string big = dir.write("big.json", "");
  fs::resize_file(big, kMaxRevocationListBytes + 1);  // sparse: no 16 MiB written
  auto oversized = RevocationList::load(big);
  ASSERT_FALSE(oversized.ok());
  EXPECT_EQ(oversized.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(oversized.status().message().find("big.json"), std::string::npos);

  auto malformed = RevocationList::load(dir.write("bad.json", "{"));
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("bad.json"), std::string::npos);
}

TEST(RevocationListFile, ReloadsWhenTheFileChangesAndKeepsTheLastGoodList) {
  TempDir dir;
  const std::string path = dir.write("status.json", R"({"entries": {"aa": {"status": "REVOKED"}}})");
  RevocationListFile file(path);
  auto first = file.current();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_NE((*first)->find("aa"), nullptr);

  dir.write("status.json", R"({"entries": {"bb": {"status": "REVOKED"}, "cc": {"status": "SUSPENDED"}}})");
  auto second = file.current();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->find("aa"), nullptr);
  EXPECT_NE((*second)->find("cc"), nullptr);
  EXPECT_NE((*first)->find("aa"), nullptr) << "a list handed out stays valid";

  dir.write("status.json", R"({"entries": {"half-writt)");
  auto third = file.current();
  ASSERT_TRUE(third.ok()) << "the last good list stays in use";
  EXPECT_NE((*third)->find("cc"), nullptr);
  EXPECT_FALSE(file.last_error().ok());

  dir.write("status.json", R"({"entries": {}})");
  auto fourth = file.current();
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ((*fourth)->size(), 0u);
  EXPECT_TRUE(file.last_error().ok());
}

TEST(RevocationListFile, FailsUntilAListWasReadOnce) {
  TempDir dir;
  RevocationListFile file(dir.write("x", "") + ".missing");
  auto none = file.current();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::NotFound);
}

}  // namespace
}  // namespace cellserve::fleet::attest
