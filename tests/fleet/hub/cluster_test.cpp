// Several hubs in one process on one PostgreSQL server (tests/support/postgres_server.h): one
// leads, and another takes over when it stops; an agent connected to one hub stays online and is
// counted on the other; the cluster key is required, private and the same on every hub; a hub
// whose database is away answers 503 on user routes and serves again when it is back.
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <boost/beast/http/verb.hpp>
#include <boost/json.hpp>

#include "fleet/agent/agent.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/secret_box.h"
#include "fleet/hub/hub.h"
#include "tests/fleet/hub/hub_http.h"
#include "tests/support/postgres_server.h"

namespace cellserve::fleet {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using hub_http::Reply;
using hub_http::request;

// Polls `done` every 50 ms for at most `limit`: whether it held.
template <typename F>
bool eventually(F done, std::chrono::milliseconds limit = 15s) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = testing::shared_postgres_server();
    if (!server.ok()) GTEST_SKIP() << server.status().message();
    server_ = *server;
    auto url = server_->create_database();
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
    dir_ = fs::temp_directory_path() / ("cs-cluster-" + random_hex(6));
    fs::create_directories(dir_);
    key_ = (dir_ / "cluster.key").string();
    ASSERT_TRUE(SecretBox::create(key_).ok());
  }
  void TearDown() override {
    for (auto& [name, hub] : hubs_) hub->stop();
    hubs_.clear();
    fs::remove_all(dir_);
  }

  HubOptions options(const std::string& name) {
    HubOptions o;
    o.port = 0;
    o.data_dir = (dir_ / name).string();
    o.store = url_;
    o.cluster_key_file = key_;
    o.poll_interval = 100ms;
    o.ping_timeout = 2000ms;
    o.log = [this, name](const std::string& line) {
      std::lock_guard lock(mu_);
      logs_[name] += line + "\n";
    };
    return o;
  }
  Hub& start(const std::string& name) {
    auto hub = Hub::start(options(name));
    EXPECT_TRUE(hub.ok()) << hub.status().to_string();
    if (!hub.ok()) std::abort();
    return *(hubs_[name] = std::move(hub).value());
  }
  std::string log(const std::string& name) {
    std::lock_guard lock(mu_);
    return logs_[name];
  }
  // How many times hub `name` logged that it took the lead.
  int leads(const std::string& name) {
    const std::string text = log(name);
    int n = 0;
    for (size_t at = text.find("leads the fleet"); at != std::string::npos; at = text.find("leads the fleet", at + 1))
      ++n;
    return n;
  }
  json::object hubs_seen_by(const std::string& name) {
    const Reply r = request(hubs_.at(name)->port(), http::verb::get, "/api/v1/hubs");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().as_object();
  }
  // The id of hub `name` (its own row in the hubs API).
  std::string id_of(const std::string& name) {
    const json::object seen = hubs_seen_by(name);
    for (const json::value& h : seen.at("hubs").as_array()) {
      if (h.at("self").as_bool()) return std::string(h.at("id").as_string());
    }
    return "";
  }
  // The holder of the unexpired reconcile lease, as hub `name` sees it ("" when none).
  std::string leader_seen_by(const std::string& name) {
    const json::object seen = hubs_seen_by(name);
    for (const json::value& l : seen.at("leases").as_array()) {
      if (l.at("name").as_string() == "reconcile" && l.at("expires_in_ms").to_number<int64_t>() > 0) {
        return std::string(l.at("holder").as_string());
      }
    }
    return "";
  }
  bool online_on(const std::string& name, const std::string& processor) {
    const Reply r = request(hubs_.at(name)->port(), http::verb::get, "/api/v1/processors");
    const json::value seen = r.json();
    for (const json::value& p : seen.at("processors").as_array()) {
      if (p.at("id").as_string() == processor) return p.at("online").as_bool();
    }
    return false;
  }

  testing::PostgresServer* server_ = nullptr;
  std::string url_;
  fs::path dir_;
  std::string key_;
  std::mutex mu_;
  std::map<std::string, std::string> logs_;
  std::map<std::string, std::unique_ptr<Hub>> hubs_;
};

TEST_F(ClusterTest, OneHubLeadsAndAnotherTakesOverWhenItStops) {
  start("a");
  start("b");
  ASSERT_TRUE(eventually([&] {
    return hubs_seen_by("b").at("hubs").as_array().size() == 2 && leads("a") + leads("b") == 1;
  })) << log("a")
      << log("b");
  const std::string leader = leads("a") == 1 ? "a" : "b";
  const std::string other = leader == "a" ? "b" : "a";
  EXPECT_EQ(leader_seen_by(other), id_of(leader));
  const json::object both = hubs_seen_by(other);
  for (const json::value& h : both.at("hubs").as_array()) EXPECT_TRUE(h.at("alive").as_bool());
  // Many rounds later, still one leader: the other hub never took the lease while it was held.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(leads(other), 0) << log(other);
  EXPECT_EQ(leads(leader), 1) << log(leader);

  const std::string other_id = id_of(other);
  hubs_.at(leader)->stop();
  hubs_.erase(leader);
  ASSERT_TRUE(eventually([&] { return leads(other) == 1; })) << log(other);
  EXPECT_EQ(leader_seen_by(other), other_id);
  // The stopped hub left: its row is gone.
  const json::array rows = hubs_seen_by(other).at("hubs").as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("id").as_string(), other_id);
}

TEST_F(ClusterTest, AnAgentOnOneHubIsOnlineForTheOtherAndCountedThere) {
  start("a");
  // Hub a leads before b starts: it is a that judges whether b's agent is held by a live hub.
  ASSERT_TRUE(eventually([&] { return leads("a") == 1; })) << log("a");
  Hub& b = start("b");
  const fs::path agent_dir = dir_ / "agent";
  fs::create_directories(agent_dir);
  AgentOptions ao;
  ao.hub_url = "http://127.0.0.1:" + std::to_string(b.port());
  ao.data_dir = agent_dir.string();
  ao.name = "phone-1";
  ao.benchmark_shape = "";
  ao.log = [](const std::string&) {};
  auto agent = Agent::start(ao);
  ASSERT_TRUE(agent.ok()) << agent.status().to_string();
  const std::string id = (*agent)->id();
  ASSERT_TRUE(eventually([&] { return online_on("a", id); })) << log("a") << log("b");
  const std::string b_id = id_of("b");
  const json::object counted = hubs_seen_by("a");
  for (const json::value& h : counted.at("hubs").as_array()) {
    EXPECT_EQ(h.at("agents").to_number<int64_t>(), h.at("id").as_string() == b_id ? 1 : 0);
  }
  // Rounds of the leader (a) later, the agent is still online: its tunnel is b's, recorded.
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(online_on("a", id)) << log("a");
  EXPECT_EQ(log("a").find("agent " + id.substr(0, 16) + " offline"), std::string::npos);

  (*agent)->stop();
  ASSERT_TRUE(eventually([&] { return !online_on("a", id); })) << log("b");
  const json::object after = hubs_seen_by("a");
  for (const json::value& h : after.at("hubs").as_array()) EXPECT_EQ(h.at("agents").to_number<int64_t>(), 0);
}

TEST_F(ClusterTest, TheClusterKeyIsRequiredPrivateAndTheSameOnEveryHub) {
  HubOptions no_key = options("n");
  no_key.cluster_key_file.clear();
  auto refused = Hub::start(no_key);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--cluster-key-file"), std::string::npos) << refused.status().message();

  const std::string shared = (dir_ / "shared.key").string();
  ASSERT_TRUE(SecretBox::create(shared).ok());
  ::chmod(shared.c_str(), 0640);
  HubOptions readable = options("r");
  readable.cluster_key_file = shared;
  refused = Hub::start(readable);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::PermissionDenied) << refused.status().message();

  // A secret sealed by hub a opens on hub b (same key); hub c, with another key, is refused.
  Hub& a = start("a");
  const std::string spec =
      R"({"name":"risk","replicas":1,"max_price_per_day":1,"model":{"url":"http://127.0.0.1:1/m.gguf","sha256":")" +
      std::string(64, 'a') + R"("}})";
  ASSERT_EQ(request(a.port(), http::verb::post, "/api/v1/deployments", spec).status, 201);
  const Reply set =
      request(a.port(), http::verb::put, "/api/v1/deployments/risk/secrets/TOKEN", R"({"value":"s3cret"})");
  ASSERT_LT(set.status, 300) << set.body;
  start("b");
  HubOptions wrong = options("c");
  wrong.cluster_key_file = (dir_ / "other.key").string();
  ASSERT_TRUE(SecretBox::create(wrong.cluster_key_file).ok());
  refused = Hub::start(wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not the key the other hubs sealed"), std::string::npos)
      << refused.status().message();

  // And the keys themselves: what one hub's box seals, another box of the same file opens.
  auto one = SecretBox::open_existing(key_);
  auto two = SecretBox::open_existing(key_);
  auto other = SecretBox::open_existing(wrong.cluster_key_file);
  ASSERT_TRUE(one.ok() && two.ok() && other.ok());
  const std::string sealed = one->seal("value");
  EXPECT_EQ(two->open(sealed).value(), "value");
  EXPECT_FALSE(other->open(sealed).ok());
}

// A server of its own: the test stops and starts it.
TEST(ClusterStoreAway, UserRoutesAnswer503UntilTheDatabaseIsBack) {
  auto server = testing::PostgresServer::start();
  if (!server.ok()) GTEST_SKIP() << server.status().message();
  auto url = (*server)->create_database();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  const fs::path dir = fs::temp_directory_path() / ("cs-cluster-" + random_hex(6));
  fs::create_directories(dir);
  const std::string key = (dir / "cluster.key").string();
  ASSERT_TRUE(SecretBox::create(key).ok());
  HubOptions o;
  o.port = 0;
  o.data_dir = (dir / "hub").string();
  o.store = *url;
  o.cluster_key_file = key;
  o.poll_interval = 100ms;
  o.log = [](const std::string&) {};
  auto hub = Hub::start(o);
  ASSERT_TRUE(hub.ok()) << hub.status().to_string();
  const int port = (*hub)->port();
  const std::string spec =
      R"({"name":"risk","replicas":1,"max_price_per_day":1,"model":{"url":"http://127.0.0.1:1/m.gguf","sha256":")" +
      std::string(64, 'a') + R"("}})";
  ASSERT_EQ(request(port, http::verb::post, "/api/v1/deployments", spec).status, 201);
  const auto store_away = [&] {
    const Reply r = request(port, http::verb::get, "/d/risk/r/0/v1/models");
    return r.status == 503 && r.body.find("cannot reach its store") != std::string::npos &&
           !r.header("Retry-After").empty();
  };
  EXPECT_FALSE(store_away());  // unmatched, but the store answers

  ASSERT_TRUE((*server)->stop().ok());
  EXPECT_TRUE(eventually(store_away, 30s));
  ASSERT_TRUE((*server)->start_again().ok());
  EXPECT_TRUE(eventually([&] { return !store_away(); }, 30s));
  (*hub)->stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cellserve::fleet
