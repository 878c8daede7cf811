// What a device's download token opens (issue 43, item 6): only the model and adapters of the
// replicas assigned to the device now, and nothing once it is revoked or its rows move away.
#include "fleet/hub/files_access.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "fleet/crypto/identity.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

class FilesAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs-files-access-" + random_hex(6));
    fs::create_directories(dir_);
    auto store = open_sqlite_store((dir_ / "hub.db").string());
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
    for (const std::string& id : {device_, other_}) {
      Processor p;
      p.id = id;
      p.name = id.substr(0, 4);
      ASSERT_TRUE(store_->upsert_processor(p).ok());
    }
    deploy("risk", "http://hub.example:8090/files/risk%20model.gguf?v=1",
           {encode_lora_ref({"http://hub.example:8090/files/adapters/risk.gguf", std::string(64, 'b'), 1}),
            encode_lora_ref({"https://proxy.example/hub/files/behind.gguf", std::string(64, 'c'), 1})});
    deploy("other", "http://hub.example:8090/files/other.gguf", {});
    assign("risk", device_);
    assign("other", other_);
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void deploy(const std::string& name, const std::string& url, std::vector<std::string> lora) {
    Deployment d;
    d.spec.name = name;
    d.spec.model_url = url;
    d.spec.model_sha256 = std::string(64, 'a');
    d.spec.engine.lora = std::move(lora);
    d.created_ms = 1000;
    ASSERT_TRUE(store_->create_deployment(d).ok());
  }
  void assign(const std::string& deployment, const std::string& processor) {
    auto rows = store_->replicas(deployment);
    ASSERT_TRUE(rows.ok() && !rows->empty());
    Replica r = rows->front();
    r.processor_id = processor;
    r.state = ReplicaState::Ready;
    ASSERT_TRUE(store_->update_replica(r, 2000).ok());
  }
  StatusCode may(const std::string& id, const std::string& path) { return device_may_fetch(*store_, id, path).code(); }

  fs::path dir_;
  std::unique_ptr<Store> store_;
  const std::string device_ = std::string(64, '1');
  const std::string other_ = std::string(64, '2');
};

TEST_F(FilesAccess, OpensOnlyTheAssignedModelAndAdapters) {
  EXPECT_EQ(may(device_, "/files/risk%20model.gguf"), StatusCode::Ok);
  EXPECT_EQ(may(device_, "/files/risk model.gguf"), StatusCode::Ok);  // the same file, decoded
  EXPECT_EQ(may(device_, "/files/adapters/risk.gguf"), StatusCode::Ok);
  EXPECT_EQ(may(device_, "/files/behind.gguf"), StatusCode::Ok);               // behind a proxy's /hub prefix
  EXPECT_EQ(may(device_, "/files/other.gguf"), StatusCode::PermissionDenied);  // another deployment's
  EXPECT_EQ(may(device_, "/files/anything-else.gguf"), StatusCode::PermissionDenied);
  EXPECT_EQ(may(device_, "/files/risk%00model.gguf"), StatusCode::PermissionDenied);
  EXPECT_EQ(may(device_, "/files/risk.gguf"), StatusCode::PermissionDenied);  // a suffix of a name is not it
  EXPECT_EQ(may(other_, "/files/other.gguf"), StatusCode::Ok);
  EXPECT_EQ(may(other_, "/files/risk%20model.gguf"), StatusCode::PermissionDenied);
}

TEST_F(FilesAccess, StopsAtRevokeAndWhenTheRowsMoveAway) {
  ASSERT_TRUE(store_->set_enrollment(device_, Enrollment::Revoked, std::nullopt, 1).ok());
  const Status revoked = device_may_fetch(*store_, device_, "/files/risk%20model.gguf");
  EXPECT_EQ(revoked.code(), StatusCode::PermissionDenied);
  EXPECT_NE(revoked.message().find("not enrolled"), std::string::npos) << revoked.message();
  ASSERT_TRUE(store_->set_enrollment(device_, Enrollment::Pending, std::nullopt, 1).ok());
  EXPECT_EQ(may(device_, "/files/risk%20model.gguf"), StatusCode::PermissionDenied);
  ASSERT_TRUE(store_->set_enrollment(device_, Enrollment::Enrolled, std::nullopt, 1).ok());
  EXPECT_EQ(may(device_, "/files/risk%20model.gguf"), StatusCode::Ok);
  ASSERT_TRUE(store_->mark_processor_offline(device_, 3000).ok());  // its rows go Offline
  EXPECT_EQ(may(device_, "/files/risk%20model.gguf"), StatusCode::PermissionDenied);
  EXPECT_EQ(may(std::string(64, '3'), "/files/other.gguf"), StatusCode::PermissionDenied);  // unknown device
}

TEST(DecodedUrlPath, TakesThePathOfHttpUrlsOnly) {
  EXPECT_EQ(decoded_url_path("https://h:1/files/a%2Fb.gguf?x#y"), "/files/a/b.gguf");
  EXPECT_EQ(decoded_url_path("HTTP://h/files/a.gguf"), "/files/a.gguf");
  EXPECT_EQ(decoded_url_path("hf://owner/repo/files/a.gguf"), "");
  EXPECT_EQ(decoded_url_path("http://h"), "");
  EXPECT_EQ(decoded_url_path("http://h/files/%zz"), "");
}

}  // namespace
}  // namespace cellserve::fleet
