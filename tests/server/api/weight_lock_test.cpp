// `serve --mlock`: the weights the forward pass reads are locked in RAM, and a refusal gives the
// size and the lock limit.
#include "server/weight_lock.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST(WeightLock, TheRefusalGivesTheSizeAndTheLimit) {
  EXPECT_EQ(mlock_refusal(uint64_t{6} << 30, ENOMEM, uint64_t{8} << 20),
            "--mlock: cannot lock the weights' 6.0 GiB: Cannot allocate memory; RLIMIT_MEMLOCK allows 8 MiB (raise it "
            "with ulimit -l, or LimitMEMLOCK= for a systemd service)");
  EXPECT_EQ(mlock_refusal(uint64_t{6} << 30, ENOMEM, UINT64_MAX),
            "--mlock: cannot lock the weights' 6.0 GiB: Cannot allocate memory; RLIMIT_MEMLOCK is unlimited, so the "
            "RAM itself is short");
}

TEST(WeightLock, TheResidentWeightsAreThePackedCopiesAndTheMappedTensors) {
  CS_REQUIRE_TESTDATA();
  for (const char* name : {"qwen3-tiny-q4_0.gguf", "qwen35-tiny-q4_k_m.gguf", "qwen3-tiny-f32.gguf"}) {
    auto model = engine::load_model(testing::testdata_path(std::string("models/") + name));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    uint64_t resident = 0;
    for (const auto& r : (*model)->resident_weights()) resident += r.size();
    uint64_t tensors = 0;
    const bool tied = (*model)->file().find_tensor("output.weight") == nullptr;
    for (const auto& t : (*model)->file().tensors()) {
      // An embedding table that is not also the output matrix is read a row at a time: not listed.
      if (t.name != "token_embd.weight" || tied) tensors += t.size_bytes;
    }
    // Packed layouts hold the same blocks; the norms and biases are owned F32 copies, not listed.
    EXPECT_GT(resident, tensors * 9 / 10) << name;
    EXPECT_LT(resident, tensors * 11 / 10) << name << ": a tensor is listed in two layouts";
  }
}

TEST(WeightLock, LockingPutsTheWeightsInLockedMemoryOrSaysWhyNot) {
  CS_REQUIRE_TESTDATA();
  if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer turns mlock into a no-op; nothing can be locked";
  auto model = engine::load_model(testing::testdata_path("models/qwen35-tiny-q4_k_m.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  uint64_t resident = 0;
  for (const auto& r : (*model)->resident_weights()) resident += r.size();
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  const Status locked = lock_weights(**model);
  if (!locked.ok()) {
    // Allowed only where this process may not lock that much: the message says why.
    EXPECT_EQ(locked.code(), StatusCode::ResourceExhausted);
    EXPECT_NE(locked.message().find("RLIMIT_MEMLOCK"), std::string::npos) << locked.message();
    EXPECT_EQ(locked_bytes(), 0u) << "a refusal leaves nothing locked";
    EXPECT_TRUE(limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < resident) << locked.message();
    return;
  }
  EXPECT_GE(locked_bytes(), resident);
  munlockall();
  EXPECT_EQ(locked_bytes(), 0u);
}

}  // namespace
}  // namespace cellserve::server
