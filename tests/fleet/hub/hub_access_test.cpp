// Who may reach a hub, in-process on 127.0.0.1: its connection caps and listening address at start,
// a closed hub's admin key and enrolment, download tokens, and [env] secrets that never reach its
// database in plain text. hub_test.cpp has the tunnel handshake and the REST API.
#include "fleet/hub/hub.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "fleet/agent/agent.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/secret_box.h"
#include "fleet/crypto/sha256.h"
#include "fleet/hub/files_token.h"
#include "fleet/store/store.h"
#include "tests/fleet/hub/hub_http.h"

namespace cellserve::fleet {
namespace {

namespace http = boost::beast::http;
namespace net = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using hub_http::error_message;
using hub_http::Reply;
using hub_http::request;

TEST(HubStart, TheConnectionCapsAreTheOperatorsAndAreChecked) {
  const fs::path dir = fs::temp_directory_path() / ("cs-hub-" + random_hex(6));
  HubOptions o;
  o.port = 0;
  o.data_dir = dir.string();
  for (const auto& [total, per_address] : {std::pair{0, 1}, {kMaxHubConnections + 1, 1}, {10, -1}}) {
    o.max_connections = total;
    o.max_connections_per_address = per_address;
    auto refused = Hub::start(o);
    ASSERT_FALSE(refused.ok()) << total << " " << per_address;
    EXPECT_NE(refused.status().message().find("--max-connections"), std::string::npos);
  }
  // One connection per address: while one connection is in the middle of a request (its body
  // half sent, so it cannot be evicted), a second from the same address is refused.
  o.max_connections = 16;
  o.max_connections_per_address = 1;
  auto hub = Hub::start(o);
  ASSERT_TRUE(hub.ok()) << hub.status().to_string();
  net::io_context io;
  net::ip::tcp::socket busy(io);
  busy.connect({net::ip::make_address("127.0.0.1"), static_cast<uint16_t>((*hub)->port())});
  net::write(busy,
             net::buffer(std::string("POST /api/v1/deployments HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")));
  std::this_thread::sleep_for(200ms);
  const Reply second = request((*hub)->port(), http::verb::get, "/health");
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_NE(second.body.find("too many connections from this address"), std::string::npos) << second.body;
  busy.close();
  (*hub)->stop();
  fs::remove_all(dir);
}

TEST(HubStart, AnOpenHubListensOnLoopbackOnlyUnlessInsecure) {
  const fs::path dir = fs::temp_directory_path() / ("cs-hub-" + random_hex(6));
  HubOptions o;
  o.port = 0;
  o.data_dir = dir.string();
  o.host = "0.0.0.0";
  auto refused = Hub::start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--insecure"), std::string::npos) << refused.status().message();
  o.insecure = true;
  auto open = Hub::start(o);
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  (*open)->stop();
  o.insecure = false;
  o.api_key = "admin-key";
  auto closed = Hub::start(o);
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  (*closed)->stop();
  for (const char* loopback : {"127.0.0.1", "127.0.0.2", "localhost"}) {
    HubOptions l;
    l.port = 0;
    l.data_dir = dir.string();
    l.host = loopback;
    auto hub = Hub::start(l);
    EXPECT_TRUE(hub.ok()) << loopback << ": " << hub.status().to_string();
    if (hub.ok()) (*hub)->stop();
  }
  fs::remove_all(dir);
}

// A hub with an admin key is closed: no user route answers without it (issue 20, item 1).
TEST(HubClosed, EveryUserRouteAndTheFilesNeedTheKey) {
  const fs::path dir = fs::temp_directory_path() / ("cs-hub-" + random_hex(6));
  HubOptions o;
  o.port = 0;
  o.data_dir = dir.string();
  o.api_key = "admin-key";
  o.domain = "fleet.test";
  auto started = Hub::start(o);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  Hub& hub = **started;
  { std::ofstream(dir / "files" / "model.gguf") << "weights"; }
  const std::map<std::string, std::string> key{{"authorization", "Bearer admin-key"}};
  const std::map<std::string, std::string> wrong{{"authorization", "Bearer nope"}};
  const std::string spec = R"({"name":"risk","max_price_per_day":2,"model":{"url":"https://x/m.gguf","sha256":")" +
                           std::string(64, 'a') + R"("}})";
  ASSERT_EQ(request(hub.port(), http::verb::post, "/api/v1/deployments", spec, key).status, 201);
  const auto expect_refused = [&](const Reply& r, const std::string& what) {
    EXPECT_EQ(r.status, 401) << what << ": " << r.body;
    if (r.status != 401) return;
    EXPECT_EQ(r.json().at("error").at("code").as_string(), "invalid_api_key") << what;
    EXPECT_EQ(r.json().at("error").at("type").as_string(), "authentication_error") << what;
    EXPECT_EQ(r.headers.at("WWW-Authenticate"), "Bearer") << what;
  };
  for (const auto* headers : {static_cast<const std::map<std::string, std::string>*>(nullptr), &wrong}) {
    const auto& h = headers == nullptr ? std::map<std::string, std::string>{} : *headers;
    expect_refused(request(hub.port(), http::verb::get, "/d/risk/v1/models", "", h), "deployment endpoint");
    expect_refused(request(hub.port(), http::verb::post, "/d/risk/v1/chat/completions", "{}", h), "chat");
    expect_refused(request(hub.port(), http::verb::get, "/d/risk/r/0/v1/models", "", h), "replica address");
    expect_refused(request(hub.port(), http::verb::get, "/d/nosuch/v1/models", "", h), "unknown deployment");
    std::map<std::string, std::string> host = h;
    host["host"] = "risk.fleet.test";
    expect_refused(request(hub.port(), http::verb::get, "/v1/models", "", host), "deployment host");
    host["host"] = "risk-0.fleet.test";
    expect_refused(request(hub.port(), http::verb::get, "/v1/models", "", host), "replica host");
    EXPECT_EQ(request(hub.port(), http::verb::get, "/files/model.gguf", "", h).status, 401);
    EXPECT_EQ(request(hub.port(), http::verb::get, "/metrics", "", h).status, 401);
  }
  // With the key: the endpoint answers (its models), the file downloads.
  const Reply models = request(hub.port(), http::verb::get, "/d/risk/v1/models", "", key);
  EXPECT_EQ(models.status, 200) << models.body;
  const Reply file = request(hub.port(), http::verb::get, "/files/model.gguf", "", key);
  EXPECT_EQ(file.status, 200);
  EXPECT_EQ(file.body, "weights");
  EXPECT_EQ(request(hub.port(), http::verb::get, "/health").status, 200) << "health stays open";
  hub.stop();
  fs::remove_all(dir);
}

// Enrolment on a closed hub (issue 20, item 2): an unknown device is refused and waits for
// approval; a token enrols as many devices as it has uses; a revoked device is cut off.
TEST(HubEnrollment, OnlyEnrolledDevicesJoinAClosedHub) {
  const fs::path dir = fs::temp_directory_path() / ("cs-hub-" + random_hex(6));
  std::mutex mu;
  std::string hub_log;
  HubOptions o;
  o.port = 0;
  o.data_dir = dir.string();
  o.api_key = "admin-key";
  o.poll_interval = 100ms;
  o.log = [&](const std::string& line) {
    std::lock_guard lock(mu);
    hub_log += line + "\n";
  };
  auto started = Hub::start(o);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  Hub& hub = **started;
  const std::map<std::string, std::string> key{{"authorization", "Bearer admin-key"}};
  const auto processor = [&](const std::string& id) -> json::object {
    const Reply r = request(hub.port(), http::verb::get, "/api/v1/processors", "", key);
    const json::value list = r.json();
    for (const auto& p : list.at("processors").as_array()) {
      if (p.at("id").as_string() == id) return p.as_object();
    }
    return {};
  };
  const auto wait_for = [&](const std::string& id, const std::function<bool(const json::object&)>& done) {
    for (int i = 0; i < 300; ++i) {
      if (const json::object p = processor(id); !p.empty() && done(p)) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  };
  const auto online = [](const json::object& p) { return p.at("online").as_bool(); };
  std::vector<std::string> agent_logs(3);
  const auto agent = [&](int n, const std::string& token) {
    AgentOptions ao;
    ao.hub_url = "http://127.0.0.1:" + std::to_string(hub.port());
    ao.data_dir = (dir / ("agent" + std::to_string(n))).string();
    fs::create_directories(ao.data_dir);
    ao.name = "device-" + std::to_string(n);
    ao.benchmark_shape = "";
    ao.enroll_token = token;
    ao.log = [&, n](const std::string& line) {
      std::lock_guard lock(mu);
      agent_logs[n] += line + "\n";
    };
    return Agent::start(ao);
  };

  // No token: refused with the reason, recorded as pending; approval lets it in.
  auto stranger = agent(0, "");
  ASSERT_TRUE(stranger.ok()) << stranger.status().to_string();
  const std::string stranger_id = (*stranger)->id();
  ASSERT_TRUE(wait_for(stranger_id, [](const json::object& p) { return p.at("enrollment").as_string() == "pending"; }));
  EXPECT_FALSE(online(processor(stranger_id)));
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(mu);
      if (agent_logs[0].find("not enrolled") != std::string::npos) break;
    }
    std::this_thread::sleep_for(50ms);
  }
  {
    std::lock_guard lock(mu);
    EXPECT_NE(agent_logs[0].find("403"), std::string::npos) << agent_logs[0];
    EXPECT_NE(agent_logs[0].find("cellserve fleet approve " + stranger_id), std::string::npos) << agent_logs[0];
  }
  EXPECT_EQ(request(hub.port(), http::verb::post, "/api/v1/processors/" + stranger_id + "/approve").status, 401);
  const Reply approved =
      request(hub.port(), http::verb::post, "/api/v1/processors/" + stranger_id + "/approve", "", key);
  ASSERT_EQ(approved.status, 200) << approved.body;
  EXPECT_TRUE(wait_for(stranger_id, online)) << hub_log;

  // A one-use token: the first device joins with it, the second is refused.
  EXPECT_EQ(request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens", R"({"uses":0})", key).status, 400);
  EXPECT_EQ(request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens", R"({"expires_seconds":5})", key).status,
            400);
  const Reply created = request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens", R"({"uses":1})", key);
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string token(created.json().at("token").as_string());
  auto first = agent(1, token);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(wait_for((*first)->id(), online)) << hub_log;
  auto second = agent(2, token);
  ASSERT_TRUE(second.ok());
  const std::string second_id = (*second)->id();
  EXPECT_TRUE(wait_for(second_id, [](const json::object& p) { return p.at("enrollment").as_string() == "pending"; }));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(online(processor(second_id)));
  {
    std::lock_guard lock(mu);
    EXPECT_NE(agent_logs[2].find("used up or expired"), std::string::npos) << agent_logs[2];
    EXPECT_EQ(hub_log.find(token), std::string::npos) << "the token reached the log";
  }
  const Reply listed = request(hub.port(), http::verb::get, "/api/v1/enrollment-tokens", "", key);
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body.find(token), std::string::npos) << "the token is shown once only";
  EXPECT_EQ(listed.json().at("tokens").as_array()[0].at("uses_left").to_number<int64_t>(), 0);
  // A token withdrawn before use enrols nobody.
  const Reply spare = request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens", R"({"uses":5})", key);
  ASSERT_EQ(spare.status, 201);
  const std::string spare_id(spare.json().at("id").as_string());
  EXPECT_EQ(request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens/" + spare_id + "/withdraw").status, 401);
  EXPECT_EQ(
      request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens/" + spare_id + "/withdraw", "", key).status,
      200);
  EXPECT_EQ(request(hub.port(), http::verb::post, "/api/v1/enrollment-tokens/zz/withdraw", "", key).status, 404);

  // Revoked: its tunnel closes at once and it cannot come back.
  const Reply revoked = request(hub.port(), http::verb::post, "/api/v1/processors/" + stranger_id + "/revoke", "", key);
  ASSERT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_TRUE(wait_for(stranger_id, [](const json::object& p) { return !p.at("online").as_bool(); }));
  std::this_thread::sleep_for(1500ms);  // the agent retries meanwhile
  EXPECT_FALSE(online(processor(stranger_id)));
  EXPECT_EQ(processor(stranger_id).at("enrollment").as_string(), "revoked");
  {
    std::lock_guard lock(mu);
    EXPECT_NE(agent_logs[0].find("revoked"), std::string::npos) << agent_logs[0];
  }
  EXPECT_EQ(request(hub.port(), http::verb::post, "/api/v1/processors/zz/revoke", "", key).status, 404);
  for (auto* a : {&*stranger, &*first, &*second}) (*a)->stop();
  hub.stop();
  fs::remove_all(dir);
}

TEST(FilesTokens, OnlyThisHubsUnexpiredTokensForAProcessorPass) {
  const std::string id = std::string(64, 'a');
  const FilesTokens tokens;
  const int64_t now = 1'700'000'000;
  const std::string token = tokens.issue(id, now);
  EXPECT_EQ(tokens.verify(token, now), id);
  EXPECT_EQ(tokens.issue(id, now + 1), token) << "stable within a period: no push per round";
  EXPECT_EQ(tokens.verify(token, now + FilesTokens::kPeriodSeconds), id) << "valid through the next period";
  EXPECT_FALSE(tokens.verify(token, now + 2 * FilesTokens::kPeriodSeconds)) << "expired";
  EXPECT_FALSE(FilesTokens().verify(token, now)) << "another hub's key";
  std::string forged = token;
  forged[forged.size() - 1] = forged.back() == '0' ? '1' : '0';
  EXPECT_FALSE(tokens.verify(forged, now));
  // The processor and the expiry are covered by the MAC.
  std::string other = token;
  other.replace(4, 64, std::string(64, 'b'));
  EXPECT_FALSE(tokens.verify(other, now));
  const size_t expiry_at = token.find('.', 4 + 64) + 1;
  std::string later = token;
  later[expiry_at] = later[expiry_at] == '9' ? '8' : '9';
  EXPECT_FALSE(tokens.verify(later, now));
  for (const std::string& bad :
       std::vector<std::string>{"", "cs1.", "cs1...", "admin-key", "cs1." + id + ".x." + std::string(64, '0'),
                                std::string(300, 'a'), "cs1." + std::string(64, 'A') + token.substr(68)}) {
    EXPECT_FALSE(tokens.verify(bad, now)) << bad;
  }
}

// Hubs sharing a cluster key accept each other's download tokens (an agent tunnelled to one hub
// downloads a model from another's /files/); a hub with another key, or none, does not.
TEST(FilesTokens, HubsOfOneClusterAcceptEachOthersTokens) {
  const std::string id = std::string(64, 'c');
  const int64_t now = 1'700'000'000;
  const std::string key(32, '\x5a');
  const std::string token = FilesTokens::for_cluster(key).issue(id, now);
  EXPECT_EQ(FilesTokens::for_cluster(key).verify(token, now), id);
  EXPECT_FALSE(FilesTokens::for_cluster(std::string(32, '\x5b')).verify(token, now)) << "another cluster's key";
  EXPECT_FALSE(FilesTokens().verify(token, now)) << "a hub on its own";
  EXPECT_FALSE(FilesTokens::for_cluster(key).verify(FilesTokens().issue(id, now), now)) << "a lone hub's token";
}

// [env] secrets are sealed before they reach hub.db (issue 20, item 5, at rest): the file, its
// WAL and every API answer lack the value; plain values an older hub stored are sealed at start.
TEST(HubSecrets, EnvValuesNeverReachTheDatabaseInPlainText) {
  const fs::path dir = fs::temp_directory_path() / ("cs-hub-" + random_hex(6));
  const std::string secret = "recognisable-" + random_hex(12);
  const std::string older = "older-plain-" + random_hex(12);
  fs::create_directories(dir);
  {
    // What an older hub left: a deployment whose env is in plain text.
    auto store = open_sqlite_store((dir / "hub.db").string());
    ASSERT_TRUE(store.ok());
    Deployment d;
    d.spec.name = "legacy";
    d.spec.model_url = "https://x/m.gguf";
    d.spec.model_sha256 = std::string(64, 'a');
    d.spec.env = {{"OLD_TOKEN", older}};
    ASSERT_TRUE((*store)->create_deployment(d).ok());
  }
  const auto file_has = [&](const std::string& needle) {
    for (const char* name : {"hub.db", "hub.db-wal", "hub.db-shm", "secrets.key"}) {
      std::ifstream in(dir / name, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes.find(needle) != std::string::npos) return true;
    }
    return false;
  };
  HubOptions o;
  o.port = 0;
  o.data_dir = dir.string();
  std::string log;
  o.log = [&](const std::string& line) { log += line + "\n"; };
  {
    auto hub = Hub::start(o);
    ASSERT_TRUE(hub.ok()) << hub.status().to_string();
    struct stat st {};
    ASSERT_EQ(::stat((dir / "secrets.key").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    const std::string spec = R"({"name":"risk","max_price_per_day":2,"model":{"url":"https://x/m.gguf","sha256":")" +
                             std::string(64, 'a') + R"("},"env":{"API_TOKEN":")" + secret + R"("}})";
    const Reply created = request((*hub)->port(), http::verb::post, "/api/v1/deployments", spec);
    ASSERT_EQ(created.status, 201) << created.body;
    const Reply changed = request((*hub)->port(), http::verb::put, "/api/v1/deployments/risk", spec);
    ASSERT_EQ(changed.status, 200) << changed.body;
    for (const char* path : {"/api/v1/deployments", "/api/v1/deployments/risk", "/api/v1/deployments/legacy"}) {
      const Reply r = request((*hub)->port(), http::verb::get, path);
      EXPECT_EQ(r.body.find(secret), std::string::npos) << path;
      EXPECT_EQ(r.body.find(older), std::string::npos) << path;
    }
    EXPECT_NE(request((*hub)->port(), http::verb::get, "/api/v1/deployments/risk").body.find("***"), std::string::npos);
    EXPECT_FALSE(file_has(secret)) << "a secret in plain text in the data folder";
    (*hub)->stop();
  }
  EXPECT_FALSE(file_has(secret));
  EXPECT_FALSE(file_has(older)) << "the older hub's plain value was not sealed";
  EXPECT_EQ(log.find(secret), std::string::npos);
  // The sealed values open with this hub's key, and only with it.
  auto store = open_sqlite_store((dir / "hub.db").string());
  ASSERT_TRUE(store.ok());
  auto d = (*store)->deployment("risk");
  ASSERT_TRUE(d.ok() && d->has_value());
  ASSERT_EQ((*d)->spec.env.size(), 1u);
  auto box = SecretBox::open_or_create((dir / "secrets.key").string());
  ASSERT_TRUE(box.ok());
  EXPECT_EQ(*box->open((*d)->spec.env[0].second), secret);
  auto other = SecretBox::open_or_create((dir / "other.key").string());
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->open((*d)->spec.env[0].second).ok());
  // Derived secrets (each deployment's replica key): stable for one key and purpose, distinct
  // across purposes and keys.
  EXPECT_EQ(box->derive("replica-key risk 1"), box->derive("replica-key risk 1"));
  EXPECT_EQ(box->derive("replica-key risk 1").size(), 64u);
  EXPECT_NE(box->derive("replica-key risk 1"), box->derive("replica-key risk 2"));
  EXPECT_NE(box->derive("replica-key risk 1"), other->derive("replica-key risk 1"));
  store->reset();
  // A secrets key others can read is refused.
  ::chmod((dir / "secrets.key").c_str(), 0644);
  auto refused = Hub::start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("chmod 600"), std::string::npos);
  fs::remove_all(dir);
}

TEST(HubStart, RefusesAMissingOrUnwritableDataDir) {
  HubOptions o;
  EXPECT_FALSE(Hub::start(o).ok());
  o.data_dir = "/proc/no-such-place/hub";
  EXPECT_FALSE(Hub::start(o).ok());
}

}  // namespace
}  // namespace cellserve::fleet
