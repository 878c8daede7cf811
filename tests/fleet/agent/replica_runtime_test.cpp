// The replica runtime's download loop: a permanent failure (404, 410, 403) stops at once and says
// so; a transient one (500) is retried a bounded number of times, then the replica stays failed.
// The backoff is shortened to a millisecond so the bounded retries take moments.
#include "fleet/agent/replica_runtime.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "fleet/download/downloader.h"
#include "net/http_server.h"
#include "net/json_error.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cs_agent_XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A model server that answers every request with `status` and counts the requests.
class FailingModelServer {
 public:
  explicit FailingModelServer(int status) : status_(status) {
    auto started = net::HttpServer::start({.host = "127.0.0.1", .port = 0},
                                          [this](const net::HttpRequest&, net::ResponseWriter& w) {
                                            ++requests_;
                                            net::send_error(w, status_, "the remote says no: secret-detail");
                                          });
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    if (started.ok()) server_ = std::move(started).value();
  }
  ~FailingModelServer() {
    if (server_) server_->stop();
  }
  std::string origin() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::string url() const { return origin() + "/files/model.gguf"; }
  int requests() const { return requests_.load(); }

 private:
  const int status_;
  std::atomic<int> requests_{0};
  std::unique_ptr<net::HttpServer> server_;
};

// Runs a replica of a model at `url` until it gives up (or 20 s pass) and returns its last report.
// `hub_urls`: the hubs the agent may join (their addresses are trusted though on loopback).
ReplicaReport run_until_failed_for_good(const std::string& url, const std::string& models_dir,
                                        const std::vector<std::string>& hub_urls,
                                        bool allow_private_downloads = false) {
  AssignmentMessage a;
  a.deployment = "risk";
  a.index = 0;
  a.model_url = url;
  a.model_sha256 = std::string(64, 'a');
  RuntimeOptions options;
  options.models_dir = models_dir;
  options.autotune = false;
  options.download_backoff = 1ms;
  options.hub_urls = hub_urls;
  options.allow_private_downloads = allow_private_downloads;
  ReplicaRuntime runtime(a, options);
  runtime.start();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  ReplicaReport report = runtime.report();
  while (std::chrono::steady_clock::now() < deadline) {
    report = runtime.report();
    if (report.gave_up) break;  // the runtime stopped trying: the hub would move the replica
    std::this_thread::sleep_for(5ms);
  }
  runtime.stop();
  return report;
}

// An assignment of deployment "risk" to a simulated engine (no model is downloaded).
AssignmentMessage simulated_assignment() {
  AssignmentMessage a;
  a.deployment = "risk";
  a.model_url = "http://127.0.0.1:1/none.gguf";
  a.model_sha256 = std::string(64, 'a');
  a.engine.simulated = true;
  return a;
}

// Waits (at most 20 s) until `runtime` is ready and returns its report then, or its last one.
ReplicaReport wait_until_ready(const ReplicaRuntime& runtime) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (runtime.report().state != ReplicaState::Ready && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  return runtime.report();
}

class PermanentDownloadFailure : public ::testing::TestWithParam<int> {};

TEST_P(PermanentDownloadFailure, StopsAfterOneRequestAndSaysSo) {
  TempDir dir;
  FailingModelServer server(GetParam());
  const ReplicaReport report = run_until_failed_for_good(server.url(), dir.path(), {server.origin()});
  EXPECT_EQ(report.state, ReplicaState::Failed);
  EXPECT_TRUE(report.gave_up);
  EXPECT_NE(report.detail.find("not retried"), std::string::npos) << report.detail;
  EXPECT_EQ(server.requests(), 1);
  // The remote's own error body is never read into the report.
  EXPECT_EQ(report.detail.find("secret-detail"), std::string::npos) << report.detail;
}

INSTANTIATE_TEST_SUITE_P(Statuses, PermanentDownloadFailure, ::testing::Values(404, 410, 403));

TEST(TransientDownloadFailure, IsRetriedABoundedNumberOfTimes) {
  TempDir dir;
  FailingModelServer server(500);
  const ReplicaReport report = run_until_failed_for_good(server.url(), dir.path(), {server.origin()});
  EXPECT_EQ(report.state, ReplicaState::Failed);
  EXPECT_TRUE(report.gave_up);
  EXPECT_NE(report.detail.find("gave up after " + std::to_string(kMaxDownloadAttempts) + " attempts"),
            std::string::npos)
      << report.detail;
  // Each attempt is one download_file() call of at most DownloadRequest::max_attempts transfers.
  EXPECT_EQ(server.requests(), kMaxDownloadAttempts * DownloadRequest{}.max_attempts);
}

// A hub's URL that leads to a loopback service other than the hub itself (SSRF: the device's own
// services, its network, a metadata endpoint) is refused before a byte is sent, for good; the
// agent's --allow-private-downloads lifts it.
TEST(PrivateDownload, IsRefusedUnlessTheAgentAllowsIt) {
  TempDir dir;
  FailingModelServer internal(404);
  const ReplicaReport refused =
      run_until_failed_for_good(internal.url(), dir.path(), {"http://127.0.0.1:1"});  // the hub is elsewhere
  EXPECT_EQ(refused.state, ReplicaState::Failed);
  EXPECT_TRUE(refused.gave_up);
  EXPECT_NE(refused.detail.find("refused to connect to 127.0.0.1, a loopback address"), std::string::npos)
      << refused.detail;
  EXPECT_EQ(internal.requests(), 0);

  const ReplicaReport allowed =
      run_until_failed_for_good(internal.url(), dir.path(), {"http://127.0.0.1:1"}, /*allow_private_downloads=*/true);
  EXPECT_NE(allowed.detail.find("HTTP 404"), std::string::npos) << allowed.detail;
  EXPECT_EQ(internal.requests(), 1);
}

// Every hub of the agent's list is trusted as the hub itself (agent --hub URL1,URL2): its files
// are on loopback here, and fetched; a listed hub's address is no SSRF.
TEST(PrivateDownload, IsAllowedFromAnyListedHub) {
  TempDir dir;
  FailingModelServer second_hub(404);
  const ReplicaReport report =
      run_until_failed_for_good(second_hub.url(), dir.path(), {"http://127.0.0.1:1", second_hub.origin()});
  EXPECT_NE(report.detail.find("HTTP 404"), std::string::npos) << report.detail;
  EXPECT_EQ(second_hub.requests(), 1);
}

// The replica answers only requests that carry its deployment's replica key, which reaches the
// device sealed with its assignment (only the hub has it): a device's replica cannot be called
// around the hub, and without its secrets it serves nothing.
TEST(ReplicaKey, GuardsEveryRequest) {
  TempDir dir;
  const AssignmentMessage a = simulated_assignment();
  RuntimeOptions options;
  options.models_dir = dir.path();
  options.autotune = false;
  options.simulate = engine::simulated::SimulateOptions{1000, 1000, 1};
  ReplicaRuntime runtime(a, options);
  const auto call = [&](const std::string& authorization) {
    net::HttpRequest req;
    req.method = "GET";
    req.path = "/v1/models";
    if (!authorization.empty()) req.headers["authorization"] = authorization;
    cellserve::testing::FakeResponseWriter w;
    runtime.handle(req, w);
    return w;
  };
  EXPECT_EQ(call("Bearer anything").status, 503);  // no secrets opened yet
  EXPECT_EQ(runtime.report().secrets_version, 0);
  runtime.set_secrets(3, std::string(64, 'c'), std::string(64, 'e'),
                      DeploymentSecrets{"the-replica-key", {{"HF_TOKEN", "hf_x"}}, ""});
  EXPECT_EQ(runtime.report().secrets_version, 3);
  runtime.start();
  const ReplicaReport ready = wait_until_ready(runtime);
  ASSERT_EQ(ready.state, ReplicaState::Ready) << ready.detail;
  EXPECT_EQ(call("").status, 401);
  EXPECT_EQ(call("Bearer the-replica-kez").status, 401);
  EXPECT_EQ(call("Bearer the-replica-key-and-more").status, 401);
  const cellserve::testing::FakeResponseWriter ok = call("Bearer the-replica-key");
  EXPECT_EQ(ok.status, 200) << ok.body;
  // A new version (a rotated secret) replaces the values in place: nothing reloads.
  runtime.set_secrets(4, std::string(64, 'd'), std::string(64, 'f'), DeploymentSecrets{"the-replica-key", {}, ""});
  EXPECT_EQ(runtime.report().state, ReplicaState::Ready);
  EXPECT_EQ(runtime.report().secrets_version, 4);
  EXPECT_EQ(call("Bearer the-replica-key").status, 200);
  runtime.stop();
}

// Once loaded, the replica reports the settings it runs with (the hub shows them as "tuned"): a
// simulated engine is not autotuned, runs one thread, its own slots and the default context.
TEST(TunedSettings, AreReportedOnceTheReplicaIsReady) {
  TempDir dir;
  const AssignmentMessage a = simulated_assignment();
  RuntimeOptions options;
  options.models_dir = dir.path();
  options.autotune = true;  // a simulated engine is never autotuned, whatever the agent's flag
  options.simulate = engine::simulated::SimulateOptions{1000, 1000, 3};
  ReplicaRuntime runtime(a, options);
  EXPECT_FALSE(runtime.report().tuned.has_value());
  runtime.start();
  const ReplicaReport report = wait_until_ready(runtime);
  ASSERT_EQ(report.state, ReplicaState::Ready) << report.detail;
  ASSERT_TRUE(report.tuned.has_value());
  EXPECT_EQ(report.tuned->threads, 1);
  EXPECT_EQ(report.tuned->prefill_chunk, 250);  // a quarter second of its prompt speed
  EXPECT_EQ(report.tuned->parallel, 3);
  EXPECT_EQ(report.tuned->ctx_size, 3 * 4096);
  EXPECT_EQ(report.tuned->batch_size, 512);
  EXPECT_FALSE(report.tuned->autotuned);
  runtime.stop();
}

// A device in the middle of a long prompt answers its status at once and says how far it is: the
// report shows the prompt partly read (neither none nor all of it), which a report that waited
// for the prefill to end could never show, and then more of it.
TEST(PrefillProgress, IsReportedWhileALongPromptIsRead) {
  TempDir dir;
  const AssignmentMessage a = simulated_assignment();
  RuntimeOptions options;
  options.models_dir = dir.path();
  options.autotune = false;
  options.simulate = engine::simulated::SimulateOptions{200, 1000, 1};  // 200 prompt tokens a second
  ReplicaRuntime runtime(a, options);
  runtime.set_secrets(1, std::string(64, 'c'), std::string(64, 'e'), DeploymentSecrets{"the-replica-key", {}, ""});
  runtime.start();
  const ReplicaReport ready = wait_until_ready(runtime);
  ASSERT_EQ(ready.state, ReplicaState::Ready) << ready.detail;
  EXPECT_EQ(ready.prefill_total, 0);

  std::string prompt;
  for (int i = 0; i < 700; ++i) prompt += "fraud ";  // about 2,100 tokens: 10 s at 200 tokens a second
  net::HttpRequest req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers["authorization"] = "Bearer the-replica-key";
  req.headers["content-type"] = "application/json";
  req.body = R"({"prompt":")" + prompt + R"(","max_tokens":4})";
  cellserve::testing::FakeResponseWriter w;
  std::thread client([&] { runtime.handle(req, w); });

  const auto deadline = std::chrono::steady_clock::now() + 30s;
  ReplicaReport first;  // the first report with the prompt partly read
  while (std::chrono::steady_clock::now() < deadline) {
    first = runtime.report();
    if (first.prefill_done > 0 && first.prefill_done < first.prefill_total) break;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GT(first.prefill_done, 0) << "the request ended: " << w.snapshot().status << " " << w.snapshot().body;
  EXPECT_LT(first.prefill_done, first.prefill_total);
  EXPECT_GT(first.prefill_total, 1000) << "the long prompt's tokens";
  EXPECT_EQ(first.free_slots, 0);
  ReplicaReport later = first;
  while (std::chrono::steady_clock::now() < deadline && later.prefill_done == first.prefill_done) {
    later = runtime.report();
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GT(later.prefill_done, first.prefill_done) << "progress moves on";
  w.gone = true;  // the client leaves: the slot is freed without reading the rest
  client.join();
  runtime.stop();
}

}  // namespace
}  // namespace cellserve::fleet
