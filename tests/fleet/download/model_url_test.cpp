// resolve_model_url, is_huggingface_url and cache_path_for, including $HF_ENDPOINT.
#include "fleet/download/model_url.h"

#include <cstdlib>
#include <optional>

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

// Sets (or unsets, for nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ModelUrl, HttpUrlsAreUnchanged) {
  ScopedEnv env("HF_ENDPOINT", std::nullopt);
  for (const std::string url :
       {"http://example.com/a.gguf", "https://example.com:8443/x/y.gguf?download=1", "HTTPS://Example.com/a.gguf"}) {
    EXPECT_EQ(resolve_model_url(url).value(), url);
  }
}

TEST(ModelUrl, HuggingFaceShorthand) {
  ScopedEnv env("HF_ENDPOINT", std::nullopt);
  EXPECT_EQ(resolve_model_url("hf://Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf").value(),
            "https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf");
  EXPECT_EQ(resolve_model_url("hf://owner/repo@v1.2/sub/dir/model.gguf").value(),
            "https://huggingface.co/owner/repo/resolve/v1.2/sub/dir/model.gguf");
  EXPECT_EQ(resolve_model_url("hf://owner/repo/my model+1.gguf").value(),
            "https://huggingface.co/owner/repo/resolve/main/my%20model%2B1.gguf");
}

TEST(ModelUrl, HfEndpointOverridesTheBase) {
  ScopedEnv env("HF_ENDPOINT", "http://127.0.0.1:9999/mirror/");
  EXPECT_EQ(hf_endpoint(), "http://127.0.0.1:9999/mirror");
  EXPECT_EQ(resolve_model_url("hf://o/r@dev/f.gguf").value(), "http://127.0.0.1:9999/mirror/o/r/resolve/dev/f.gguf");
  EXPECT_TRUE(is_huggingface_url("http://127.0.0.1:9999/o/r/resolve/main/f.gguf"));
  ScopedEnv empty("HF_ENDPOINT", "");
  EXPECT_EQ(hf_endpoint(), "https://huggingface.co");
}

TEST(ModelUrl, BadUrlsNameTheProblem) {
  ScopedEnv env("HF_ENDPOINT", std::nullopt);
  for (const std::string url : {"", "ftp://example.com/a.gguf", "/local/file.gguf", "model.gguf", "http://",
                                "hf://owner", "hf://owner/repo", "hf://owner/repo/", "hf://owner/repo@/f.gguf",
                                "hf:///repo/f.gguf", "hf://owner/repo/../x.gguf", "hf://owner/repo/a//b.gguf"}) {
    const auto r = resolve_model_url(url);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument) << url;
    EXPECT_NE(r.status().message().find("'" + url + "'"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("hf://owner/repo"), std::string::npos) << r.status().message();
  }
}

TEST(ModelUrl, IsHuggingFaceUrl) {
  ScopedEnv env("HF_ENDPOINT", std::nullopt);
  EXPECT_TRUE(is_huggingface_url("hf://o/r/f.gguf"));
  EXPECT_TRUE(is_huggingface_url("https://huggingface.co/o/r/resolve/main/f.gguf"));
  EXPECT_TRUE(is_huggingface_url("https://HF.co/o/r/resolve/main/f.gguf"));
  EXPECT_FALSE(is_huggingface_url("https://example.com/huggingface.co/f.gguf"));
  EXPECT_FALSE(is_huggingface_url("https://huggingface.co.evil.example/f.gguf"));
  EXPECT_FALSE(is_huggingface_url("ftp://huggingface.co/f.gguf"));
}

TEST(ModelUrl, CachePaths) {
  ScopedEnv env("HF_ENDPOINT", std::nullopt);
  EXPECT_EQ(cache_path_for("/c", "hf://o/r/sub/f.gguf"), "/c/hf/o/r/main/sub/f.gguf");
  EXPECT_EQ(cache_path_for("/c/", "hf://o/r@v2/f.gguf"), "/c/hf/o/r/v2/f.gguf");
  EXPECT_EQ(cache_path_for("/c", "https://huggingface.co/o/r/resolve/v2/f.gguf"), "/c/hf/o/r/v2/f.gguf");
  EXPECT_EQ(cache_path_for("/c", "http://Example.com:8080/models/a b.gguf"), "/c/example.com_8080/models/a_b.gguf");
  EXPECT_EQ(cache_path_for("/c", "https://example.com"), "/c/example.com/index");
  // Never outside the cache folder.
  EXPECT_EQ(cache_path_for("/c", "http://h/../../etc/passwd"), "/c/h/_/_/etc/passwd");
  // A query string makes a distinct, stable name.
  const std::string q1 = cache_path_for("/c", "https://h/f.gguf?sig=1");
  const std::string q2 = cache_path_for("/c", "https://h/f.gguf?sig=2");
  EXPECT_EQ(q1.rfind("/c/h/f-", 0), 0u) << q1;
  EXPECT_TRUE(q1.ends_with(".gguf")) << q1;
  EXPECT_NE(q1, q2);
  EXPECT_EQ(q1, cache_path_for("/c", "https://h/f.gguf?sig=1"));
}

}  // namespace
}  // namespace cellserve::fleet
