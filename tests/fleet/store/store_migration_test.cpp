// `cellserve hub migrate-store` (fleet/store/store_migration.h): a SQLite store filled through the
// Store API with at least one of everything is copied into a fresh PostgreSQL database, and every
// record read back through the PostgreSQL store is the one the SQLite store returns; a second
// migration into the same target is refused and changes nothing; a failure half-way leaves the
// target empty; the batch store's rows come along.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>

#include <unistd.h>

#include "fleet/batch/pg_batch_store.h"
#include "fleet/batch/sqlite_batch_store.h"
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_store.h"
#include "fleet/store/sqlite_db.h"
#include "fleet/store/store.h"
#include "fleet/store/store_migration.h"
#include "tests/fleet/every_field_spec.h"
#include "tests/support/postgres_server.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kHour = 60 * 60 * 1000;

// A folder for hub.db and batch.db, removed at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ =
        fs::temp_directory_path() / ("cs_migration_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Each field, in a form a failed comparison shows whole (doubles to 17 digits).
class Fields {
 public:
  template <typename T>
  Fields& operator<<(const T& v) {
    out_ << v << "|";
    return *this;
  }
  Fields& operator<<(double v) {
    out_ << std::setprecision(17) << v << "|";
    return *this;
  }
  Fields& operator<<(const std::vector<std::string>& v) {
    for (const std::string& s : v) out_ << s << ",";
    out_ << "|";
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string fields(const Processor& p) {
  return (Fields() << p.id << p.name << p.label << p.address << p.specs.ram_bytes << p.specs.free_disk_bytes
                   << p.specs.cores << p.specs.big_cores << p.specs.arch << p.specs.os << p.specs.cpu_features
                   << p.benchmark.prefill_tps << p.benchmark.decode_tps << p.benchmark.shape << p.price_per_day
                   << p.attested << p.attestation << p.simulated << static_cast<int>(p.enrollment) << p.online
                   << p.registered_ms << p.last_seen_ms)
      .str();
}
std::string fields(const Deployment& d) {
  return (Fields() << deployment_spec_document(d.spec) << d.created_ms << d.secrets_version).str();
}
std::string fields(const Replica& r) {
  return (Fields() << r.deployment << r.index << r.processor_id << r.price_per_day << replica_state_name(r.state)
                   << r.progress << r.detail << r.prefill_tps << r.decode_tps << r.matched_ms << r.ready_since_ms
                   << r.cost << r.draining << r.reloading << serving_document(r.serving) << r.secrets_version)
      .str();
}
std::string fields(const ServiceInterval& s) {
  return (Fields() << s.processor_id << s.deployment << s.index << s.model_sha256 << s.from_ms << s.until_ms).str();
}
std::string fields(const ApiKey& k) {
  return (Fields() << k.id << k.hash << k.name << k.deployment << k.deployment_created_ms << k.rpm << k.tokens_per_day
                   << k.created_ms << k.revoked << k.requests << k.tokens << k.day << k.day_tokens)
      .str();
}
std::string fields(const EnrollmentToken& t) {
  return (Fields() << t.hash << t.label << t.uses_left << t.expires_ms << t.created_ms).str();
}
std::string fields(const AttestationPin& a) {
  return (Fields() << a.processor_id << a.key_sha256 << a.key_spki << a.challenge << a.verified_boot_key << a.boot_state
                   << a.app_packages << a.app_digests << a.evidence << a.pinned_ms << a.held << a.change_approved
                   << a.ecdh)
      .str();
}
std::string fields(const DeviceAgreement& a) {
  return (Fields() << a.processor_id << a.checks << a.agreed << a.lost << a.recent_bits << a.recent_count
                   << a.quarantined << a.reason << a.changed_ms)
      .str();
}
std::string fields(const CanarySet& c) { return (Fields() << c.deployment << c.cases << c.every).str(); }
std::string fields(const ScalingEvent& e) {
  return (Fields() << e.deployment << e.at_ms << e.action << e.from_replicas << e.to_replicas << e.reason).str();
}

template <typename T>
std::vector<std::string> all_fields(const Result<std::vector<T>>& rows) {
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  std::vector<std::string> out;
  if (rows.ok()) {
    for (const T& r : *rows) out.push_back(fields(r));
  }
  return out;
}

// Everything a Store returns, each record as its fields: two stores hold the same when equal.
std::vector<std::string> everything(Store& s) {
  std::vector<std::string> out;
  auto add = [&](const std::string& what, const std::vector<std::string>& rows) {
    out.push_back("-- " + what + " " + std::to_string(rows.size()));
    out.insert(out.end(), rows.begin(), rows.end());
  };
  auto processors = s.processors();
  add("processors", all_fields(processors));
  if (processors.ok()) {
    for (const Processor& p : *processors) {
      auto one = s.processor(p.id);
      EXPECT_TRUE(one.ok() && one->has_value()) << p.id;
      if (one.ok() && one->has_value()) add("processor " + p.id, {fields(**one)});
      add("history " + p.id, all_fields(s.service_history(p.id, 0, std::numeric_limits<int64_t>::max(), 100)));
    }
  }
  add("deployments", all_fields(s.deployments()));
  add("replicas", all_fields(s.replicas("")));
  add("api keys", all_fields(s.api_keys()));
  add("tokens", all_fields(s.enrollment_tokens()));
  add("agreements", all_fields(s.agreements()));
  add("canaries", all_fields(s.canaries()));
  add("pins", all_fields(s.attestation_pins()));
  add("scaling events", all_fields(s.scaling_events().latest("risk", 500)));
  return out;
}

Processor device(const std::string& id, int64_t registered_ms) {
  Processor p;
  p.id = id;
  p.name = "phone \"" + id + "\" ü";
  p.address = "203.0.113.7";
  p.specs.ram_bytes = (12ULL << 30) + 3;
  p.specs.free_disk_bytes = 64ULL << 30;
  p.specs.cores = 8;
  p.specs.big_cores = 2;
  p.specs.arch = "aarch64";
  p.specs.os = "android 15";
  p.specs.cpu_features = {"neon", "dotprod"};
  p.benchmark = {123.456789012345, 17.25, "qwen3-0.6b"};
  p.price_per_day = 0.1 + 0.2;  // not a short decimal
  p.attested = true;
  p.attestation = "verified";
  p.online = true;
  p.registered_ms = registered_ms;
  p.last_seen_ms = registered_ms + 5;
  return p;
}

void must(const Status& s) { ASSERT_TRUE(s.ok()) << s.to_string(); }

// One of everything the hub keeps, written through the Store API as a hub writes it.
void fill(Store& s) {
  must(s.upsert_processor(device("aa01", kT0)));
  must(s.upsert_processor(device("bb02", kT0 + 1)));
  must(s.set_enrollment("aa01", Enrollment::Enrolled, std::string("rack-1"), kT0 + 2));
  must(s.set_enrollment("cc03", Enrollment::Pending, std::nullopt, kT0 + 3));  // seen, not approved
  must(s.add_enrollment_token({std::string(64, 'e'), "spring batch", 3, kT0 + 30 * kHour, kT0}));

  Deployment d;
  d.spec = test_specs::every_field_spec();
  d.spec.name = "risk";
  d.spec.replicas = 2;
  d.spec.spares = 1;
  d.spec.env = {{"PLAIN", "1"}, {"HF_TOKEN", "sealed:v1:AAECAwQFBgcICQ=="}};  // sealed values are stored as given
  d.created_ms = kT0 + 10;
  must(s.create_deployment(d));
  DeploymentSpec changed = d.spec;
  changed.env = {{"PLAIN", "2"}, {"HF_TOKEN", "sealed:v1:AAECAwQFBgcICQ=="}};
  must(s.update_deployment_spec(changed));  // raises the secrets version

  // Replica 0: Ready for two hours (cost accrued), out, then Ready again (an open interval).
  auto rows = s.replicas("risk");
  ASSERT_TRUE(rows.ok());
  Replica r = (*rows)[0];
  r.processor_id = "aa01";
  r.price_per_day = 2.4;
  r.state = ReplicaState::Ready;
  r.matched_ms = kT0 + 20;
  r.prefill_tps = 99.5;
  r.decode_tps = 12.125;
  r.detail = "tuned: ctx 4096";
  r.secrets_version = 2;
  must(s.update_replica(r, kT0 + kHour));
  r.state = ReplicaState::Failed;
  must(s.update_replica(r, kT0 + 3 * kHour));
  r.state = ReplicaState::Ready;
  must(s.update_replica(r, kT0 + 4 * kHour));
  Replica spare = (*rows)[2];
  spare.processor_id = "bb02";
  spare.state = ReplicaState::Downloading;
  spare.progress = 0.375;
  spare.draining = true;
  must(s.update_replica(spare, kT0 + 4 * kHour));

  ApiKey live{"0123456789ab", "0123456789ab" + std::string(52, 'f'), "scoring", "risk", kT0 + 10, 60, 100000, kT0 + 11};
  live.requests = 5;
  live.tokens = 777;
  live.day = 19675;
  live.day_tokens = 321;
  must(s.add_api_key(live));
  ApiKey revoked{"ba9876543210", "ba9876543210" + std::string(52, 'c'), "old", "risk", kT0 + 10, 0, 0, kT0 + 12};
  must(s.add_api_key(revoked));
  revoked.revoked = true;
  revoked.requests = 41;
  revoked.tokens = 90210;
  revoked.day = 19676;
  revoked.day_tokens = 12;
  must(s.update_api_key(revoked));

  must(s.save_agreement({"aa01", 40, 38, 2, 0b1011, 4, true, "lost 2 of its last 4", kT0 + 50}));
  must(s.set_canaries({"risk", "{\"request\":{\"prompt\":\"2+2\"},\"expect\":\"4\"}\n", 25}));
  // Two decisions in the same millisecond: their order is kept.
  must(s.scaling_events().add(
      {"risk", kT0 + 60, "scale_up", 1, 2, "queue wait 12.0 s > target_wait_s 10.0 (3 waiting)"}));
  must(s.scaling_events().add({"risk", kT0 + 60, "held", 2, 2, "max_replicas 2 reached"}));
  AttestationPin pin;
  pin.processor_id = "aa01";
  pin.key_sha256 = std::string(64, '1');
  pin.key_spki = "MFkwEwYHKoZIzj0CAQ==";
  pin.challenge = std::string(64, '2');
  pin.verified_boot_key = std::string(64, '3');
  pin.boot_state = "Verified, locked";
  pin.app_packages = {"com.example.cellserve"};
  pin.app_digests = {std::string(64, '4')};
  pin.evidence = "{\"chain\":[\"MIIB\"]}";
  pin.pinned_ms = kT0 + 60;
  pin.held = "a new boot key";
  pin.change_approved = true;
  pin.ecdh = true;
  must(s.put_attestation_pin(pin));
}

StoreMigration migration(const std::string& from, const std::string& batch_from, const std::string& to) {
  StoreMigration m;
  m.from = from;
  m.batch_from = batch_from;
  m.to = to;
  return m;
}

class StoreMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = testing::shared_postgres_server();
    if (!server.ok()) GTEST_SKIP() << server.status().message();
    auto url = (*server)->create_database();
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
    hub_db_ = dir_.file("hub.db");
  }
  // The rows in every table of the hub's PostgreSQL store's data.
  int64_t target_rows() {
    auto pg = PgConnection::open(url_);
    EXPECT_TRUE(pg.ok());
    if (!pg.ok()) return -1;
    int64_t total = 0;
    for (const char* t : {"processors", "enrollment_tokens", "deployments", "replicas", "service_history", "api_keys",
                          "device_agreement", "canaries", "attestation_pins"}) {
      auto r = (*pg)->exec(std::string("SELECT count(*) FROM ") + t);
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      if (r.ok()) total += r->row(0).i64(0);
    }
    return total;
  }

  TempDir dir_;
  std::string url_;
  std::string hub_db_;
};

TEST_F(StoreMigrationTest, CopiesEveryRecord) {
  std::vector<std::string> expected;
  {
    auto sqlite = open_sqlite_store(hub_db_);
    ASSERT_TRUE(sqlite.ok()) << sqlite.status().to_string();
    fill(**sqlite);
    expected = everything(**sqlite);
  }
  auto copied = migrate_store(migration(hub_db_, "", url_));
  ASSERT_TRUE(copied.ok()) << copied.status().to_string();
  std::map<std::string, int64_t> rows;
  for (const MigratedTable& t : *copied) rows[t.table] = t.rows;
  EXPECT_EQ(rows["processors"], 3);
  EXPECT_EQ(rows["replicas"], 3);
  EXPECT_EQ(rows["api_keys"], 2);
  EXPECT_EQ(rows["service_history"], 2);  // one closed interval, one open

  auto pg = open_postgres_store(url_);
  ASSERT_TRUE(pg.ok()) << pg.status().to_string();
  EXPECT_EQ(everything(**pg), expected);
  // The open interval and the accrued cost came as they were: the bill goes on from there.
  auto r0 = (*pg)->replicas("risk");
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ((*r0)[0].ready_since_ms, kT0 + 4 * kHour);
  EXPECT_DOUBLE_EQ((*r0)[0].cost, 2.4 * 2 / 24);
  EXPECT_DOUBLE_EQ((*pg)->replica_cost((*r0)[0], kT0 + 5 * kHour), 2.4 * 3 / 24);
}

TEST_F(StoreMigrationTest, ASecondMigrationIsRefusedAndChangesNothing) {
  {
    auto sqlite = open_sqlite_store(hub_db_);
    ASSERT_TRUE(sqlite.ok());
    fill(**sqlite);
  }
  ASSERT_TRUE(migrate_store(migration(hub_db_, "", url_)).ok());
  const int64_t before = target_rows();
  ASSERT_GT(before, 0);
  auto again = migrate_store(migration(hub_db_, "", url_));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(again.status().message().starts_with("the target store is not empty: processors"))
      << again.status().message();
  EXPECT_EQ(target_rows(), before);
}

// The last table copied holds a value PostgreSQL text cannot take: the tables copied before it
// are rolled back with it.
TEST_F(StoreMigrationTest, AFailureHalfWayLeavesTheTargetEmpty) {
  {
    auto sqlite = open_sqlite_store(hub_db_);
    ASSERT_TRUE(sqlite.ok());
    fill(**sqlite);
  }
  {
    auto db = SqliteDb::open(hub_db_);
    ASSERT_TRUE(db.ok());
    auto update = (*db)->prepare("UPDATE attestation_pins SET evidence = ?");
    ASSERT_TRUE(update.ok());
    std::string with_nul = R"({"a":"x"})";
    with_nul[6] = '\0';
    ASSERT_TRUE(update->bind(1, with_nul).run().ok());
  }
  auto failed = migrate_store(migration(hub_db_, "", url_));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("attestation_pins.evidence holds a NUL byte"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(target_rows(), 0);
}

TEST_F(StoreMigrationTest, SaysWhatIsWrongWithItsArguments) {
  auto missing = migrate_store(migration(dir_.file("absent.db"), "", url_));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  EXPECT_FALSE(fs::exists(dir_.file("absent.db")));  // not created on the way

  auto sqlite = open_sqlite_store(hub_db_);
  ASSERT_TRUE(sqlite.ok());
  auto not_pg = migrate_store(migration(hub_db_, "", dir_.file("other.db")));
  ASSERT_FALSE(not_pg.ok());
  EXPECT_EQ(not_pg.status().code(), StatusCode::InvalidArgument);

  auto unreachable =
      migrate_store(migration(hub_db_, "", "postgresql://hub:topsecret@127.0.0.1:1/fleet?connect_timeout=2"));
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.status().code(), StatusCode::Unavailable) << unreachable.status().to_string();
  EXPECT_EQ(unreachable.status().message().find("topsecret"), std::string::npos) << unreachable.status().message();
}

TEST_F(StoreMigrationTest, TheBatchStoreComesAlong) {
  const std::string batch_db = dir_.file("batch.db");
  {
    auto sqlite = open_sqlite_store(hub_db_);
    ASSERT_TRUE(sqlite.ok());
    fill(**sqlite);
    auto batches = open_sqlite_batch_store(batch_db);
    ASSERT_TRUE(batches.ok()) << batches.status().to_string();
    BatchFile f{
        "file-" + std::string(24, 'a'), "risk", "in.jsonl", "batch", 300, kT0 + 70, kT0 + 10, "0123456789ab", 0};
    must((*batches)->add_file(f));
    BatchFile lost = f;  // its bytes are gone from the folder
    lost.id = "file-" + std::string(24, 'c');
    must((*batches)->add_file(lost));
    Batch b;
    b.id = "batch_" + std::string(24, 'b');
    b.deployment = "risk";
    b.endpoint = "/v1/chat/completions";
    b.input_file_id = f.id;
    b.key_id = "0123456789ab";
    b.deployment_created_ms = kT0 + 10;
    b.status = BatchStatus::InProgress;
    b.created_ms = kT0 + 71;
    b.in_progress_ms = kT0 + 72;
    b.total = 3;
    std::vector<BatchLine> lines;
    for (int i = 1; i <= 3; ++i) {
      BatchLine line;
      line.batch_id = b.id;
      line.line = i;
      line.custom_id = "req-" + std::to_string(i);
      line.offset = 100 * static_cast<uint64_t>(i - 1);
      line.length = 100;
      lines.push_back(line);
    }
    must((*batches)->create_batch(b, lines));
  }
  {
    // Line 1 answered on aa01, line 2 leased when the hub stopped, line 3 pending: as the runner
    // leaves them (written in SQL so that the lease API, which differs between versions, is not
    // what this test depends on).
    auto db = SqliteDb::open(batch_db);
    ASSERT_TRUE(db.ok());
    must(
        (*db)->exec("UPDATE batch_lines SET state = 'done', attempts = 1, result = '{\"id\":\"r1\"}', device = "
                    "'aa01', ended_ms = 1700000000080 WHERE line = 1; "
                    "UPDATE batch_lines SET state = 'leased', attempts = 1 WHERE line = 2; "
                    "UPDATE batches SET completed = 1;"));
  }
  // The input file's bytes, over one chunk's worth, in DATA_DIR/batch/files/<id>.
  std::string content;
  for (int i = 0; content.size() < (1u << 20) + 100; ++i)
    content += "{\"custom_id\":\"req-" + std::to_string(i) + "\"}\n";
  fs::create_directories(dir_.file("batch/files"));
  {
    std::ofstream out(dir_.file("batch/files/file-" + std::string(24, 'a')), std::ios::binary);
    out << content;
  }
  // The database keeps file contents as batch_file_chunks rows (fleet/batch/pg_batch_file_store.cpp,
  // the batch schema's second version); made here as that version makes it where the batch schema
  // is older, so that the copy's format is checked either way.
  {
    ASSERT_TRUE(open_postgres_batch_store(url_).ok());
    auto conn = PgConnection::open(url_);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE((*conn)
                    ->exec_script("CREATE TABLE IF NOT EXISTS batch_file_chunks (file_id TEXT COLLATE \"C\" NOT "
                                  "NULL, seq INTEGER NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (file_id, seq))")
                    .ok());
  }
  auto copied = migrate_store(migration(hub_db_, batch_db, url_));
  ASSERT_TRUE(copied.ok()) << copied.status().to_string();
  std::map<std::string, int64_t> rows;
  for (const MigratedTable& t : *copied) rows[t.table] = t.rows;
  EXPECT_EQ(rows["files"], 2);
  EXPECT_EQ(rows["batch_lines"], 3);
  EXPECT_EQ(rows["file contents"], 1);
  EXPECT_EQ(rows["files without content"], 1);
  {
    auto conn = PgConnection::open(url_);
    ASSERT_TRUE(conn.ok());
    auto chunks = (*conn)->exec(
        "SELECT count(*), max(octet_length(data)), string_agg(data, ''::bytea ORDER BY seq) "
        "= convert_to($2, 'UTF8') FROM batch_file_chunks WHERE file_id = $1",
        PgParams().add("file-" + std::string(24, 'a')).add(content));
    ASSERT_TRUE(chunks.ok()) << chunks.status().to_string();
    EXPECT_EQ(chunks->row(0).i64(0), 2);
    EXPECT_EQ(chunks->row(0).i64(1), 1 << 20);
    EXPECT_TRUE(chunks->row(0).flag(2));
  }
  auto pg = open_postgres_batch_store(url_);
  ASSERT_TRUE(pg.ok()) << pg.status().to_string();
  auto file = (*pg)->file("file-" + std::string(24, 'a'));
  ASSERT_TRUE(file.ok() && file->has_value());
  EXPECT_EQ((*file)->bytes, 300u);
  EXPECT_EQ((*file)->owner_key, "0123456789ab");
  auto batch = (*pg)->batch("batch_" + std::string(24, 'b'));
  ASSERT_TRUE(batch.ok() && batch->has_value());
  EXPECT_EQ((*batch)->status, BatchStatus::InProgress);
  EXPECT_EQ((*batch)->completed, 1);
  EXPECT_EQ((*batch)->total, 3);
  auto done = (*pg)->results((*batch)->id, LineState::Done);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(*done, std::vector<std::string>{"{\"id\":\"r1\"}"});
  // Each line in the state it had: the leased one is leased again by a hub once its lease ends.
  EXPECT_EQ(*(*pg)->count_lines((*batch)->id, LineState::Done), 1);
  EXPECT_EQ(*(*pg)->count_lines((*batch)->id, LineState::Leased), 1);
  EXPECT_EQ(*(*pg)->count_lines((*batch)->id, LineState::Pending), 1);
  auto conn = PgConnection::open(url_);
  ASSERT_TRUE(conn.ok());
  auto places = (*conn)->exec(
      "SELECT string_agg(line || ':' || byte_offset || '+' || byte_length || ':' || custom_id || "
      "':' || device, ' ' ORDER BY line) FROM batch_lines");
  ASSERT_TRUE(places.ok()) << places.status().to_string();
  EXPECT_EQ(places->row(0).text(0), "1:0+100:req-1:aa01 2:100+100:req-2: 3:200+100:req-3:");
}

}  // namespace
}  // namespace cellserve::fleet
