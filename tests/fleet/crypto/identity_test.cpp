#include "fleet/crypto/identity.h"
#include "fleet/crypto/private_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("cs-identity-" + random_hex(8));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

TEST(Identity, SignsAndVerifies) {
  const Identity id = Identity::generate();
  ASSERT_EQ(id.id().size(), 64u);
  const std::string sig = id.sign("challenge-1");
  ASSERT_EQ(sig.size(), 128u);
  EXPECT_TRUE(verify_signature(id.id(), "challenge-1", sig));
  EXPECT_FALSE(verify_signature(id.id(), "challenge-2", sig));
  EXPECT_FALSE(verify_signature(Identity::generate().id(), "challenge-1", sig));
  std::string bad = sig;
  bad[10] = bad[10] == '0' ? '1' : '0';
  EXPECT_FALSE(verify_signature(id.id(), "challenge-1", bad));
  EXPECT_FALSE(verify_signature("zz", "challenge-1", sig));
  EXPECT_FALSE(verify_signature(id.id(), "challenge-1", sig.substr(2)));
  EXPECT_FALSE(verify_signature(id.id(), "challenge-1", std::string(128, 'g')));
}

TEST(Identity, CreatesOnceWithMode0600AndReloadsTheSameKey) {
  TempDir dir;
  const std::string path = dir.file("identity.key");
  auto first = Identity::load_or_create(path);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = Identity::load_or_create(path);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->id(), first->id());
  EXPECT_TRUE(verify_signature(first->id(), "m", again->sign("m")));
}

TEST(Identity, RefusesAKeyOthersCanReadAndAGarbageFile) {
  TempDir dir;
  const std::string path = dir.file("identity.key");
  ASSERT_TRUE(Identity::load_or_create(path).ok());
  ::chmod(path.c_str(), 0644);
  auto open = Identity::load_or_create(path);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::PermissionDenied);
  EXPECT_NE(open.status().message().find("chmod 600"), std::string::npos);

  const std::string junk = dir.file("junk.key");
  std::ofstream(junk) << "not a key";
  ::chmod(junk.c_str(), 0600);
  auto bad = Identity::load_or_create(junk);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::DataLoss);

  auto missing_dir = Identity::load_or_create(dir.file("no/such/dir/identity.key"));
  EXPECT_FALSE(missing_dir.ok());
}

// Key files are created O_EXCL | O_NOFOLLOW (issue 43, item 14): a link planted at the temporary
// name does not carry the key elsewhere (nor truncate its target), and a file already at the
// key's path is never replaced.
TEST(PrivateFile, NeverWritesThroughALinkNorOverAnExistingFile) {
  TempDir dir;
  const std::string path = dir.file("identity.key");
  const std::string victim = dir.file("victim");
  std::ofstream(victim) << "the victim's own bytes";
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  auto id = Identity::load_or_create(path);
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  std::ifstream in(victim);
  const std::string victim_now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(victim_now, "the victim's own bytes");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(::lstat((path + ".tmp").c_str(), &st), 0) << "the temporary name is left behind";
  auto again = Identity::load_or_create(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id(), id->id());

  const Status over = write_private_file(path, "another key\n");
  EXPECT_FALSE(over.ok());
  EXPECT_NE(over.message().find("File exists"), std::string::npos) << over.message();
  EXPECT_EQ(Identity::load_or_create(path)->id(), id->id());

  // A dangling link at the key's path is not followed to create the key where it points.
  const std::string linked = dir.file("linked.key");
  ASSERT_EQ(::symlink(dir.file("elsewhere.key").c_str(), linked.c_str()), 0);
  EXPECT_FALSE(Identity::load_or_create(linked).ok());
  EXPECT_FALSE(fs::exists(dir.file("elsewhere.key")));
}

TEST(Hex, RoundTripsAndRejectsBadInput) {
  const unsigned char bytes[3] = {0x00, 0xab, 0xff};
  EXPECT_EQ(to_hex(bytes, 3), "00abff");
  unsigned char back[3];
  ASSERT_TRUE(from_hex("00abff", back, 3));
  EXPECT_EQ(back[1], 0xab);
  EXPECT_FALSE(from_hex("00abf", back, 3));
  EXPECT_FALSE(from_hex("00abfg", back, 3));
  EXPECT_EQ(random_hex(16).size(), 32u);
  EXPECT_NE(random_hex(16), random_hex(16));
}

TEST(SealedToDevice, OnlyThatDeviceOpensIt) {
  const Identity device = Identity::generate();
  const Identity other = Identity::generate();
  auto sealed = seal_to_device(device.id(), "hf_secret_value");
  ASSERT_TRUE(sealed.ok()) << sealed.status().message();
  EXPECT_EQ(sealed->find(to_hex(reinterpret_cast<const unsigned char*>("hf_secret"), 9)), std::string::npos);
  auto opened = device.open_sealed(*sealed);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(*opened, "hf_secret_value");
  // A fresh ephemeral key each time: two seals of one value differ.
  EXPECT_NE(*seal_to_device(device.id(), "hf_secret_value"), *sealed);

  auto wrong = other.open_sealed(*sealed);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::DataLoss);
  std::string altered = *sealed;
  altered.back() = altered.back() == '0' ? '1' : '0';
  EXPECT_FALSE(device.open_sealed(altered).ok());
  EXPECT_FALSE(device.open_sealed("").ok());
  EXPECT_FALSE(device.open_sealed("zz").ok());
  EXPECT_FALSE(device.open_sealed(sealed->substr(0, 40)).ok());
  EXPECT_FALSE(device.open_sealed(std::string(sealed->size(), 'q')).ok());
  ASSERT_TRUE(device.open_sealed(*seal_to_device(device.id(), "")).ok());  // an empty value seals too

  EXPECT_EQ(seal_to_device("not-a-key", "x").status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(seal_to_device(std::string(64, 'g'), "x").status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace cellserve::fleet
