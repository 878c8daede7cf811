// The batch runner's retry, driven round by round (BatchService::round) on a fake replica: a
// line whose replica fails is tried again, up to three attempts, then written to the error file.
// Each test runs with the batch store in batch.db and in a PostgreSQL database (the hub's store
// there: files as chunk rows, leases and finalization claims), skipped without its binaries.
#include "fleet/hub/batch_service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#ifdef CELLSERVE_HAVE_POSTGRES
#include "tests/support/postgres_server.h"
#endif
#include "tests/fleet/hub/fake_replica.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The parameter: whether the batch store is PostgreSQL's.
class BatchServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  BatchServiceTest()
      : dir_(fs::temp_directory_path() / ("cs-batch-service-" + random_hex(6))), state_(options(), clock_) {}
  ~BatchServiceTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  HubOptions options() {
    fs::create_directories(dir_);
    HubOptions o;
    o.data_dir = dir_.string();
    o.log = [](const std::string&) {};
    return o;
  }

  void SetUp() override {
    auto store = open_sqlite_store((dir_ / "hub.db").string());
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    state_.store = std::move(store).value();
    Deployment d;
    d.spec.name = "dep";
    d.spec.replicas = 1;
    d.spec.model_url = "hf://x/y.gguf";
    d.spec.engine.parallel = 4;
    d.created_ms = 1000;
    ASSERT_TRUE(state_.store->create_deployment(d).ok());
    auto deployments = state_.store->deployments();
    ASSERT_TRUE(deployments.ok());
    Replica r;
    r.deployment = "dep";
    r.index = 0;
    r.processor_id = "p0";
    r.state = ReplicaState::Ready;
    r.secrets_version = 1;
    state_.registry.refresh(*deployments, {r}, {{"dep", "replica-key"}});
    std::string store_url;  // "": batch.db in the data folder
    if (GetParam()) {
#ifdef CELLSERVE_HAVE_POSTGRES
      auto server = testing::shared_postgres_server();
      if (!server.ok()) GTEST_SKIP() << server.status().message();
      auto url = (*server)->create_database();
      ASSERT_TRUE(url.ok()) << url.status().to_string();
      store_url = *url;
#else
      GTEST_SKIP() << "this build has no PostgreSQL support (CELLSERVE_POSTGRES off)";
#endif
    }
    auto opened = batches_.open(dir_.string(), store_url);
    ASSERT_TRUE(opened.ok()) << opened.to_string();
    batches_.add_routes(routes_);
  }

  cellserve::testing::FakeResponseWriter call(const std::string& method, const std::string& path,
                                              const std::string& body,
                                              const std::string& content_type = "application/json") {
    net::HttpRequest req;
    req.method = method;
    req.path = path;
    req.body = body;
    req.headers["content-type"] = content_type;
    cellserve::testing::FakeResponseWriter w;
    routes_.dispatch(req, w);
    return w;
  }

  // Uploads one chat request as a batch file and creates its batch; returns the batch's id.
  std::string create_batch() {
    const std::string line = R"({"custom_id":"case-1","method":"POST","url":"/v1/chat/completions",)"
                             R"("body":{"model":"dep","messages":[{"role":"user","content":"hi"}],"max_tokens":5}})";
    const std::string form =
        "--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
        "Content-Type: application/jsonl\r\n\r\n" +
        line + "\n\r\n--XyZ--\r\n";
    const cellserve::testing::FakeResponseWriter up =
        call("POST", "/d/dep/v1/files", form, "multipart/form-data; boundary=XyZ");
    EXPECT_EQ(up.status, 200) << up.body;
    const std::string file_id = std::string(json::parse(up.body).as_object().at("id").as_string());
    const cellserve::testing::FakeResponseWriter created =
        call("POST", "/d/dep/v1/batches",
             R"({"input_file_id":")" + file_id + R"(","endpoint":"/v1/chat/completions","completion_window":"24h"})");
    EXPECT_EQ(created.status, 200) << created.body;
    return std::string(json::parse(created.body).as_object().at("id").as_string());
  }
  json::object batch(const std::string& id) {
    const cellserve::testing::FakeResponseWriter w = call("GET", "/d/dep/v1/batches/" + id, "");
    EXPECT_EQ(w.status, 200) << w.body;
    return json::parse(w.body).as_object();
  }
  std::string file_content(const json::object& b, const char* field) {
    const json::value* id = b.if_contains(field);
    if (id == nullptr || !id->is_string()) return "";
    return call("GET", "/d/dep/v1/files/" + std::string(id->as_string()) + "/content", "").body;
  }
  // One runner round, then the lines it started run to their end.
  void run_round() {
    batches_.round();
    batches_.join_lines();
  }

  fs::path dir_;
  ManualClock clock_;
  HubState state_;
  std::shared_ptr<FakeReplica> replica_;
  ReplicaForwarder forwarder_{
      state_, [this](const std::string&, bool) -> std::shared_ptr<ReplicaTransport> { return replica_; }};
  BatchService batches_{state_, forwarder_};
  net::RouteTable routes_;
};

INSTANTIATE_TEST_SUITE_P(Engines, BatchServiceTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Postgres" : "Sqlite"; });

TEST_P(BatchServiceTest, ALineWhoseReplicaFailsIsRetriedAndItsAnswerIsKept) {
  int calls = 0;
  replica_ = std::make_shared<FakeReplica>([&](const net::HttpRequest& req, net::ResponseWriter& out, bool* responded) {
    EXPECT_EQ(req.path, "/d/dep/r/0/v1/chat/completions");
    ++calls;
    if (calls == 1) out.send(503, "application/json", R"({"error":{"message":"busy"}})", {});
    if (calls == 2) out.send(200, "application/json", R"({"choices":[{"message":{"content":"RISK_LEVEL: 5"}}]})", {});
    if (responded) *responded = true;
    return Status();
  });
  const std::string id = create_batch();
  run_round();  // validated
  run_round();  // attempt 1: 503, the line is pending again
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(batch(id).at("status").as_string(), "in_progress");
  run_round();  // attempt 2 answers
  EXPECT_EQ(calls, 2);
  run_round();  // finalized
  const json::object b = batch(id);
  EXPECT_EQ(b.at("status").as_string(), "completed");
  EXPECT_EQ(b.at("request_counts").as_object().at("completed").as_int64(), 1);
  EXPECT_NE(file_content(b, "output_file_id").find("RISK_LEVEL: 5"), std::string::npos);
  EXPECT_EQ(file_content(b, "error_file_id"), "");
}

TEST_P(BatchServiceTest, ALineIsTriedThreeTimesThenWrittenToTheErrorFile) {
  replica_ = std::make_shared<FakeReplica>(FakeReplica::replies(503, R"({"error":{"message":"busy"}})"));
  const std::string id = create_batch();
  run_round();  // validated
  for (int attempt = 1; attempt <= 3; ++attempt) run_round();
  EXPECT_EQ(replica_->calls(), 3);
  run_round();  // nothing more is sent: the line failed for good
  EXPECT_EQ(replica_->calls(), 3);
  const json::object b = batch(id);
  EXPECT_EQ(b.at("status").as_string(), "completed");
  EXPECT_EQ(b.at("request_counts").as_object().at("failed").as_int64(), 1);
  const std::string errors = file_content(b, "error_file_id");
  EXPECT_NE(errors.find("no answer after 3 attempts"), std::string::npos) << errors;
  EXPECT_NE(errors.find("case-1"), std::string::npos);
}

TEST_P(BatchServiceTest, AClientErrorIsTheLinesOwnAndNotRetried) {
  replica_ = std::make_shared<FakeReplica>(FakeReplica::replies(400, R"({"error":{"message":"bad"}})"));
  const std::string id = create_batch();
  run_round();
  run_round();
  run_round();
  EXPECT_EQ(replica_->calls(), 1);
  EXPECT_EQ(batch(id).at("status").as_string(), "completed");
}

// The files' bytes follow the store: on PostgreSQL none is left in the data folder, and deleting
// a file removes its content.
TEST_P(BatchServiceTest, AnOutputFileIsServedFromItsStoreAndDeletedWithIt) {
  replica_ = std::make_shared<FakeReplica>(FakeReplica::replies(200, R"({"choices":[{"message":{"content":"ok"}}]})"));
  const std::string id = create_batch();
  for (int i = 0; i < 3; ++i) run_round();
  const json::object b = batch(id);
  ASSERT_EQ(b.at("status").as_string(), "completed");
  EXPECT_NE(file_content(b, "output_file_id").find("case-1"), std::string::npos);
  size_t on_disk = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "batch" / "files"))
    on_disk += e.path().filename().string().starts_with("file-") ? 1 : 0;
  EXPECT_EQ(on_disk, GetParam() ? 0u : 2u) << "the input and the output file";
  const std::string out_id(b.at("output_file_id").as_string());
  EXPECT_EQ(call("DELETE", "/d/dep/v1/files/" + out_id, "").status, 200);
  EXPECT_EQ(call("GET", "/d/dep/v1/files/" + out_id + "/content", "").status, 404);
}

}  // namespace
}  // namespace cellserve::fleet
