// The hub in-process on 127.0.0.1 with a real agent (no model): the tunnel handshake refuses
// what it must, an agent registers and goes offline when it stops, and the REST API validates
// its input. The full flow with models is tests/server/e2e/fleet.test.mjs.
#include "fleet/hub/hub.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <boost/beast/http/verb.hpp>
#include <boost/json.hpp>

#include "fleet/agent/agent.h"
#include "fleet/batch/batch_store.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/secret_box.h"
#include "fleet/crypto/sha256.h"
#include "fleet/hub/agent_links.h"
#include "fleet/hub/files_token.h"
#include "fleet/hub/peer_link_auth.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/store/store.h"
#include "tests/fleet/hub/hub_http.h"

namespace cellserve::fleet {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using hub_http::error_message;
using hub_http::Reply;
using hub_http::request;

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs-hub-" + random_hex(6));
    HubOptions o;
    o.port = 0;
    o.data_dir = dir_.string();
    o.poll_interval = 100ms;
    o.ping_timeout = 2000ms;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      log_ += line + "\n";
    };
    auto hub = Hub::start(o);
    ASSERT_TRUE(hub.ok()) << hub.status().to_string();
    hub_ = std::move(hub).value();
    port_ = hub_->port();
  }
  void TearDown() override {
    if (hub_) hub_->stop();
    fs::remove_all(dir_);
  }

  std::string challenge() {
    const Reply r = request(port_, http::verb::get, std::string(kChallengePath));
    EXPECT_EQ(r.status, 200);
    return std::string(r.json().at("challenge").as_string());
  }

  Reply open_tunnel(const Identity& id, const std::string& challenge, const std::string& signature,
                    const std::string& origin = "") {
    return request(port_, http::verb::get, std::string(kTunnelPath), "",
                   {{"Connection", "Upgrade"},
                    {"Upgrade", std::string(kTunnelProtocol)},
                    {"X-Cellserve-Agent", id.id()},
                    {"X-Cellserve-Challenge", challenge},
                    {"X-Cellserve-Origin", origin.empty() ? own_origin() : origin},
                    {"X-Cellserve-Signature", signature}});
  }
  // The origin agents dial this hub at, and what they sign for it.
  std::string own_origin() const { return hub_origin(false, "127.0.0.1", port_); }
  std::string signed_for(const Identity& id, const std::string& challenge) const {
    return id.sign(tunnel_signature_message(own_origin(), challenge));
  }

  json::value processors() { return request(port_, http::verb::get, "/api/v1/processors").json(); }

  fs::path dir_;
  std::unique_ptr<Hub> hub_;
  int port_ = 0;
  std::mutex mu_;
  std::string log_;
};

TEST_F(HubTest, TunnelHandshakeRefusesBadSignaturesAndReusedChallenges) {
  const Identity id = Identity::generate();
  const Identity other = Identity::generate();
  std::string c = challenge();
  Reply r = open_tunnel(id, c, other.sign(tunnel_signature_message(own_origin(), c)));
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(error_message(r).find("signature"), std::string::npos);
  // The challenge was spent by that attempt, even though it failed.
  r = open_tunnel(id, c, signed_for(id, c));
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(error_message(r).find("challenge"), std::string::npos);
  r = open_tunnel(id, "made-up", signed_for(id, "made-up"));
  EXPECT_EQ(r.status, 401);
  c = challenge();
  r = request(port_, http::verb::get, std::string(kTunnelPath), "",
              {{"X-Cellserve-Agent", id.id()}, {"X-Cellserve-Challenge", c}});
  EXPECT_EQ(r.status, 400);  // no Upgrade header
  EXPECT_EQ(processors().at("processors").as_array().size(), 0u);
}

// Issue 43, item 14: a tunnel signature names the hub origin the agent dialed. A hub that relays
// this hub's challenge to an agent gets a signature for its own origin, which opens nothing here.
TEST_F(HubTest, ATunnelSignatureForAnotherHubsOriginOpensNothing) {
  const Identity id = Identity::generate();
  std::string c = challenge();
  const std::string relay = "http://relay.example:" + std::to_string(port_);
  Reply r = open_tunnel(id, c, id.sign(tunnel_signature_message(relay, c)), relay);
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(error_message(r).find("origin"), std::string::npos);
  // Claiming this hub's origin over a signature for the relay's does not verify either.
  c = challenge();
  r = open_tunnel(id, c, id.sign(tunnel_signature_message(relay, c)));
  EXPECT_EQ(r.status, 401);
  c = challenge();
  EXPECT_EQ(open_tunnel(id, c, signed_for(id, c)).status, 101);
}

// A hub on its own (no cluster key) has the hub-link routes (hub_peers.h) and refuses every link:
// nobody can relay through it to its agents, whatever they send.
TEST_F(HubTest, AHubWithoutAClusterKeyRefusesHubLinks) {
  EXPECT_EQ(request(port_, http::verb::get, std::string(kHubLinkChallengePath)).status, 403);
  const Reply r = request(port_, http::verb::get, std::string(kHubLinkPath), "",
                          {{"Connection", "Upgrade"},
                           {"Upgrade", std::string(kHubLinkProtocol)},
                           {std::string(kHubIdHeader), "hub-x"},
                           {std::string(kPeerIdHeader), "hub-y"},
                           {std::string(kLinkChallengeHeader), random_hex(32)},
                           {std::string(kLinkNonceHeader), random_hex(32)},
                           {std::string(kLinkProofHeader), std::string(64, '0')}});
  EXPECT_EQ(r.status, 403);
}

// The regression for the hub's SIGSEGV: a std::regex on the path recursed once per character and
// overflowed the stack on /d/a/r/0/ followed by ~26,000 characters. Routes are a table now.
TEST_F(HubTest, HugePathsAreAnsweredNotCrashedOn) {
  const std::string tail(60000, 'a');
  Reply r = request(port_, http::verb::get, "/d/a/r/0/" + tail);
  EXPECT_EQ(r.status, 404);  // no deployment 'a'
  r = request(port_, http::verb::get, "/d/" + tail + "/r/0/v1/models");
  EXPECT_EQ(r.status, 404);
  r = request(port_, http::verb::get, "/" + tail);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(request(port_, http::verb::get, "/health").status, 200);
}

// The regression for identity aliasing: the same key in upper-case hex registered as a second
// processor. Ids are made canonical before any lookup.
TEST_F(HubTest, AnAgentKeyInUpperCaseIsTheSameProcessor) {
  const Identity id = Identity::generate();
  std::string upper = id.id();
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string c = challenge();
  const Reply r = request(port_, http::verb::get, std::string(kTunnelPath), "",
                          {{"Connection", "Upgrade"},
                           {"Upgrade", std::string(kTunnelProtocol)},
                           {"X-Cellserve-Agent", upper},
                           {"X-Cellserve-Challenge", c},
                           {"X-Cellserve-Origin", own_origin()},
                           {"X-Cellserve-Signature", signed_for(id, c)}});
  EXPECT_EQ(r.status, 101);  // upgraded: the signature verifies with the canonical key
  const Reply bad = request(port_, http::verb::get, std::string(kTunnelPath), "",
                            {{"Connection", "Upgrade"},
                             {"Upgrade", std::string(kTunnelProtocol)},
                             {"X-Cellserve-Agent", "not-a-key"},
                             {"X-Cellserve-Challenge", challenge()}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(canonical_identity(upper), id.id());
  EXPECT_EQ(canonical_identity(id.id()), id.id());
  EXPECT_FALSE(canonical_identity(upper + "0"));
}

// The regression for the enrolment flood: 30,000 challenges from one connection evicted the
// smallest keys of a shared map, so genuine agents' handshakes failed. A client address now
// holds at most a few challenges, and only its own are replaced.
TEST_F(HubTest, AChallengeFloodFromOneAddressCannotSpendOthersChallenges) {
  AgentLinks links;
  const std::string genuine = *links.issue_challenge("10.0.0.2");
  for (int i = 0; i < 30000; ++i) ASSERT_TRUE(links.issue_challenge("10.0.0.66"));
  EXPECT_TRUE(links.redeem_challenge(genuine));
  // The flooder keeps only its newest few.
  std::vector<std::string> last;
  for (size_t i = 0; i < AgentLinks::kChallengesPerAddress + 1; ++i)
    last.push_back(*links.issue_challenge("10.0.0.66"));
  EXPECT_FALSE(links.redeem_challenge(last.front()));
  EXPECT_TRUE(links.redeem_challenge(last.back()));
  // Over HTTP too: a flood through the hub, then a real handshake from the same machine.
  for (int i = 0; i < 200; ++i) challenge();
  const Identity id = Identity::generate();
  const std::string c = challenge();
  EXPECT_EQ(open_tunnel(id, c, signed_for(id, c)).status, 101);
}

TEST_F(HubTest, TheDatabaseIsReadableByItsOwnerOnly) {
  const auto perms = fs::status(dir_ / "hub.db").permissions();
  EXPECT_EQ(perms & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

// On SQLite the hub is the only member: it lists itself, alive, holding the reconcile lease.
TEST_F(HubTest, ASqliteHubIsTheOnlyMemberAndLeads) {
  json::object seen;
  for (int i = 0; i < 200; ++i) {
    seen = request(port_, http::verb::get, "/api/v1/hubs").json().as_object();
    const json::array& leases = seen.at("leases").as_array();
    bool logged = false;  // the leader logs its lease just after the store granted it
    {
      std::lock_guard lock(mu_);
      logged = log_.find("leads the fleet (reconcile lease, token") != std::string::npos;
    }
    if (logged && !seen.at("hubs").as_array().empty() && !leases.empty() &&
        leases[0].at("expires_in_ms").to_number<int64_t>() > 0) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  const json::array& hubs = seen.at("hubs").as_array();
  ASSERT_EQ(hubs.size(), 1u) << json::serialize(seen);
  EXPECT_TRUE(hubs[0].at("self").as_bool());
  EXPECT_TRUE(hubs[0].at("alive").as_bool());
  EXPECT_EQ(hubs[0].at("peer_url").as_string(), "http://127.0.0.1:" + std::to_string(port_));
  ASSERT_EQ(seen.at("leases").as_array().size(), 1u);
  const json::object& lease = seen.at("leases").as_array()[0].as_object();
  EXPECT_EQ(lease.at("name").as_string(), "reconcile");
  EXPECT_EQ(lease.at("holder").as_string(), hubs[0].at("id").as_string());
  std::lock_guard lock(mu_);
  EXPECT_NE(log_.find("leads the fleet (reconcile lease, token"), std::string::npos) << log_;
}

TEST_F(HubTest, AgentRegistersAndGoesOfflineWhenItStops) {
  const fs::path agent_dir = dir_ / "agent";
  fs::create_directories(agent_dir);
  const fs::path specs = dir_ / "specs.json";
  std::ofstream(specs) << R"({"ram_bytes": 17179869184, "cores": 8})";
  AgentOptions ao;
  ao.hub_url = "http://127.0.0.1:" + std::to_string(port_);
  ao.data_dir = agent_dir.string();
  ao.name = "phone-1";
  ao.price_per_day = 0.75;
  ao.specs_override = specs.string();
  ao.benchmark_shape = "";
  ao.log = [](const std::string&) {};
  auto agent = Agent::start(ao);
  ASSERT_TRUE(agent.ok()) << agent.status().to_string();
  const std::string id = (*agent)->id();
  json::object p;
  for (int i = 0; i < 200; ++i) {
    const json::array list = processors().at("processors").as_array();
    if (!list.empty() && list[0].at("online").as_bool()) {
      p = list[0].as_object();
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(p.empty()) << log_;
  EXPECT_EQ(p.at("id").as_string(), id);
  EXPECT_EQ(p.at("name").as_string(), "phone-1");
  EXPECT_EQ(p.at("price_per_day").as_double(), 0.75);
  EXPECT_EQ(p.at("specs").at("ram_bytes").to_number<double>(), 17179869184.0);
  EXPECT_EQ(p.at("specs").at("cores").to_number<int64_t>(), 8);
  EXPECT_FALSE(p.at("specs").at("arch").as_string().empty());

  (*agent)->stop();
  bool offline = false;
  for (int i = 0; i < 100 && !offline; ++i) {
    offline = !processors().at("processors").as_array()[0].at("online").as_bool();
    if (!offline) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(offline) << log_;
}

TEST_F(HubTest, DeploymentApiValidatesAndRoutesByState) {
  const std::string sha(64, 'a');
  const std::string spec =
      R"({"name":"risk","replicas":2,"max_price_per_day":1,"model":{"url":"http://127.0.0.1:1/m.gguf","sha256":")" +
      sha + R"("}})";
  Reply r = request(port_, http::verb::post, "/api/v1/deployments", "{not json");
  EXPECT_EQ(r.status, 400);
  r = request(port_, http::verb::post, "/api/v1/deployments", R"({"name":"risk","replica":2})");
  EXPECT_EQ(r.status, 400);
  r = request(port_, http::verb::post, "/api/v1/deployments", spec);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json().at("replicas").as_array().size(), 2u);
  EXPECT_EQ(request(port_, http::verb::post, "/api/v1/deployments", spec).status, 409);

  // Not matched yet: the replica address says so, with Retry-After; a replica past the count is 404.
  r = request(port_, http::verb::get, "/d/risk/r/0/v1/models");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(error_message(r).find("unmatched"), std::string::npos);
  EXPECT_EQ(r.headers["Retry-After"], "5");
  EXPECT_EQ(request(port_, http::verb::get, "/d/risk/r/2/v1/models").status, 404);
  EXPECT_EQ(request(port_, http::verb::get, "/d/none/r/0/v1/models").status, 404);

  r = request(port_, http::verb::get, "/api/v1/market?min_ram=12G&replicas=3");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("eligible").to_number<int64_t>(), 0);
  EXPECT_TRUE(r.json().at("price_for_replicas").is_null());
  EXPECT_EQ(request(port_, http::verb::get, "/api/v1/market?min_ram=lots").status, 400);
  EXPECT_EQ(request(port_, http::verb::get, "/api/v1/market?colour=red").status, 400);
  EXPECT_EQ(request(port_, http::verb::get, "/api/v1/market?replicas=0").status, 400);

  EXPECT_EQ(request(port_, http::verb::patch, "/api/v1/deployments/risk").status, 405);
  // PUT changes counts, price and endpoint settings in place; a new model starts a rolling update.
  std::string changed = spec;
  changed.replace(changed.find(R"("replicas":2)"), 12, R"("replicas":3,"alias":"fraud-v1","queue_max":7)");
  r = request(port_, http::verb::put, "/api/v1/deployments/risk", changed);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("replicas").as_array().size(), 3u);
  EXPECT_EQ(r.json().at("spec").at("alias").as_string(), "fraud-v1");
  EXPECT_EQ(r.json().at("spec").at("queue_max").to_number<int64_t>(), 7);
  std::string other_model = changed;
  other_model.replace(other_model.find(sha), 64, std::string(64, 'c'));
  r = request(port_, http::verb::put, "/api/v1/deployments/risk", other_model);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("spec").at("model").at("sha256").as_string(), std::string(64, 'c'));
  // No device holds a row here: each just takes the new model at the next reconcile round.
  bool rolled = false;
  for (int i = 0; i < 200 && !rolled; ++i) {
    r = request(port_, http::verb::get, "/api/v1/deployments/risk");
    const auto shown = r.json();
    rolled = shown.at("outdated").to_number<int64_t>() == 0;
    for (const auto& row : shown.at("replicas").as_array()) {
      rolled = rolled && row.at("model_sha256").as_string() == std::string(64, 'c');
    }
    if (!rolled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(rolled) << r.body;
  EXPECT_EQ(request(port_, http::verb::put, "/api/v1/deployments/other", changed).status, 400);
  EXPECT_EQ(request(port_, http::verb::post, "/api/v1/deployments/risk/scale", R"({"replicas":0})").status, 400);
  EXPECT_EQ(request(port_, http::verb::post, "/api/v1/deployments/risk/scale", R"({"replica":2})").status, 400);
  EXPECT_EQ(request(port_, http::verb::post, "/api/v1/deployments/risk/scale", "{}").status, 400) << "no count named";
  r = request(port_, http::verb::post, "/api/v1/deployments/risk/scale", R"({"replicas":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("spec").at("replicas").to_number<int64_t>(), 1);
  // A spares-only change writes the spares alone; the replica count stays as stored.
  r = request(port_, http::verb::post, "/api/v1/deployments/risk/scale", R"({"spares":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("spec").at("replicas").to_number<int64_t>(), 1);
  EXPECT_EQ(r.json().at("spec").at("spares").to_number<int64_t>(), 1);
  r = request(port_, http::verb::post, "/api/v1/deployments/risk/scale", R"({"spares":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(request(port_, http::verb::post, "/api/v1/deployments/risk/replicas/9/drain").status, 404);
  EXPECT_EQ(request(port_, http::verb::post, "/api/v1/deployments/risk/replicas/x/drain").status, 404);
  r = request(port_, http::verb::post, "/api/v1/deployments/risk/replicas/0/drain");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json().at("replicas").as_array()[0].at("draining").as_bool());
  EXPECT_EQ(request(port_, http::verb::delete_, "/api/v1/deployments/risk").status, 200);
  EXPECT_EQ(request(port_, http::verb::delete_, "/api/v1/deployments/risk").status, 404);
  EXPECT_EQ(request(port_, http::verb::get, "/nowhere").status, 404);
}

TEST_F(HubTest, StateSurvivesARestart) {
  const std::string spec = R"({"name":"keep","max_price_per_day":2,"model":{"url":"https://x/m.gguf","sha256":")" +
                           std::string(64, 'b') + R"("},"env":{"TOKEN":"s3cret"}})";
  ASSERT_EQ(request(port_, http::verb::post, "/api/v1/deployments", spec).status, 201);
  hub_->stop();
  HubOptions o;
  o.port = 0;
  o.data_dir = dir_.string();
  o.log = [](const std::string&) {};
  auto again = Hub::start(o);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  hub_ = std::move(again).value();
  port_ = hub_->port();
  const Reply r = request(port_, http::verb::get, "/api/v1/deployments/keep");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json().at("spec").at("max_price_per_day").to_number<double>(), 2.0);
  EXPECT_EQ(r.body.find("s3cret"), std::string::npos);  // secrets are never echoed
}

// Issue 43 items 4 and 14: rows stored before keys, files and batches carried their deployment's
// creation time are bound at start to the deployment of their name (a key or file of a name with
// no deployment opens nothing), and an output past its output_expires_after is deleted, record
// and bytes.
TEST_F(HubTest, OldRowsAreBoundAtStartAndExpiredOutputsAreDeleted) {
  const std::string spec = R"({"name":"files","max_price_per_day":2,"model":{"url":"https://x/m.gguf","sha256":")" +
                           std::string(64, 'b') + R"("}})";
  ASSERT_EQ(request(port_, http::verb::post, "/api/v1/deployments", spec).status, 201);
  hub_->stop();
  const std::string secret = "csk_" + std::string(48, '7');
  ApiKey old;
  old.hash = sha256_hex(secret);
  old.id = old.hash.substr(0, 12);
  old.deployment = "files";  // deployment_created_ms 0: stored by an older hub
  ApiKey orphan = old;
  const std::string orphan_secret = "csk_" + std::string(48, '8');
  orphan.hash = sha256_hex(orphan_secret);
  orphan.id = orphan.hash.substr(0, 12);
  orphan.deployment = "gone";
  {
    auto store = open_sqlite_store((dir_ / "hub.db").string());
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    ASSERT_TRUE((*store)->add_api_key(old).ok());
    ASSERT_TRUE((*store)->add_api_key(orphan).ok());
  }
  const auto add_file = [&](BatchStore& batches, const std::string& id, int64_t expires_ms) {
    BatchFile f{id, "files", id + ".jsonl", "batch_output", 2, 1000};
    f.owner_key = old.id;
    f.expires_ms = expires_ms;
    std::ofstream(dir_ / "batch" / "files" / id) << "{}";
    return batches.add_file(f);
  };
  const std::string expired = "file-" + std::string(24, 'e');
  const std::string kept = "file-" + std::string(24, 'k');
  {
    auto batches = BatchStore::open((dir_ / "batch.db").string());
    ASSERT_TRUE(batches.ok()) << batches.status().to_string();
    ASSERT_TRUE(add_file(**batches, expired, 1).ok());
    ASSERT_TRUE(add_file(**batches, kept, 0).ok());
  }
  HubOptions o;
  o.port = 0;
  o.data_dir = dir_.string();
  o.log = [](const std::string&) {};
  auto again = Hub::start(o);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  hub_ = std::move(again).value();
  port_ = hub_->port();
  const auto as = [&](const std::string& key, const std::string& path) {
    return request(port_, http::verb::get, path, "", {{"Authorization", "Bearer " + key}});
  };
  EXPECT_EQ(as(secret, "/d/files/v1/models").status, 200) << "an older key opens the deployment of its name";
  EXPECT_EQ(as(secret, "/d/files/v1/files/" + kept).status, 200) << "and sees its older file";
  EXPECT_EQ(as(orphan_secret, "/d/gone/v1/models").status, 401) << "a key of a deleted deployment opens nothing";
  for (int i = 0; i < 100 && fs::exists(dir_ / "batch" / "files" / expired); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(fs::exists(dir_ / "batch" / "files" / expired)) << "the expired output's bytes are deleted";
  EXPECT_EQ(as(secret, "/d/files/v1/files/" + expired).status, 404);
  EXPECT_TRUE(fs::exists(dir_ / "batch" / "files" / kept));
}

// A model no device can load: each agent gives up, the hub moves the replica to the next device
// (never back to one that failed), and once every eligible device failed it says so.
TEST_F(HubTest, AReplicaThatFailsToLoadMovesToAnotherDevice) {
  const fs::path model = dir_ / "files" / "broken.gguf";
  std::ofstream(model) << "this is not a GGUF file, though its sha256 is right";
  auto sha = sha256_file(model.string());
  ASSERT_TRUE(sha.ok());
  std::vector<std::unique_ptr<Agent>> agents;
  std::vector<std::string> ids;
  for (const char* name : {"dev-a", "dev-b"}) {
    const fs::path agent_dir = dir_ / name;
    fs::create_directories(agent_dir);
    AgentOptions ao;
    ao.hub_url = "http://127.0.0.1:" + std::to_string(port_);
    ao.data_dir = agent_dir.string();
    ao.name = name;
    ao.benchmark_shape = "";
    ao.autotune = false;
    ao.log = [](const std::string&) {};
    auto agent = Agent::start(ao);
    ASSERT_TRUE(agent.ok()) << agent.status().to_string();
    ids.push_back((*agent)->id());
    agents.push_back(std::move(agent).value());
  }
  for (int i = 0; i < 200 && processors().at("processors").as_array().size() < 2; ++i)
    std::this_thread::sleep_for(50ms);
  const std::string spec = R"({"name":"broken","max_price_per_day":1,"model":{"url":"http://127.0.0.1:)" +
                           std::to_string(port_) + R"(/files/broken.gguf","sha256":")" + *sha + R"("}})";
  ASSERT_EQ(request(port_, http::verb::post, "/api/v1/deployments", spec).status, 201);
  std::string detail;
  for (int i = 0; i < 400; ++i) {
    const json::value d = request(port_, http::verb::get, "/api/v1/deployments/broken").json();
    detail = std::string(d.at("replicas").as_array()[0].at("detail").as_string());
    if (detail.find("failed on 2 devices") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(detail.find("failed on 2 devices"), std::string::npos) << detail << "\n" << log_;
  EXPECT_NE(detail.find("load"), std::string::npos) << detail;
  std::lock_guard lock(mu_);
  for (const std::string& id : ids) {
    EXPECT_NE(log_.find("failed for good on " + id.substr(0, 16)), std::string::npos) << id << "\n" << log_;
  }
  // Each device failed once: the replica never went back to one that had failed.
  size_t moves = 0;
  for (size_t at = log_.find("moving it to another device"); at != std::string::npos;
       at = log_.find("moving it to another device", at + 1)) {
    ++moves;
  }
  EXPECT_EQ(moves, 2u) << log_;
}

}  // namespace
}  // namespace cellserve::fleet
