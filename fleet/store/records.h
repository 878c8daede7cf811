// The hub's records: processors (devices running `cellserve agent`), deployments (N replicas of a
// model at a bounded price) and replicas (which processor serves replica n, its state, its cost).
// Plain structs, copied freely; the Store (store.h) persists them and the matcher reads them.
// Times are int64 Unix milliseconds supplied by the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/store/device_state.h"

namespace cellserve::fleet {

// What a processor reported about its hardware at registration.
struct ProcessorSpecs {
  uint64_t ram_bytes = 0;
  uint64_t free_disk_bytes = 0;
  int cores = 0;
  int big_cores = 0;  // cores of the fastest cluster; == cores when uniform
  std::string arch;   // "x86_64", "aarch64"
  std::string os;
  std::vector<std::string> cpu_features;
};

// The speed the processor measured for itself.
struct ProcessorBenchmark {
  double prefill_tps = 0;
  double decode_tps = 0;
  std::string shape;  // what was measured
};

// Whether a processor may join a closed hub (one with an admin key): enrolled with a token or
// approved by the operator, waiting for approval (it tried to join without either), or revoked.
// An open hub enrols every processor that joins; a revoked one is refused by any hub.
enum class Enrollment { Enrolled, Pending, Revoked };
const char* enrollment_name(Enrollment e);  // "enrolled", "pending", "revoked"
std::optional<Enrollment> parse_enrollment(std::string_view name);

// The attested key a device is pinned to (docs/attestation.md, "Pinning"), set at its first
// successful attestation: from then on every tunnel handshake of the device must be signed by
// this key, and a registration presenting another key, boot key or app is held until the
// operator approves the change (cellserve fleet approve-key).
struct AttestationPin {
  std::string processor_id;
  std::string key_sha256;         // hex SHA-256 of the key's DER SubjectPublicKeyInfo
  std::string key_spki;           // base64 DER SubjectPublicKeyInfo
  std::string challenge;          // hex: the attestation challenge the key was created with
  std::string verified_boot_key;  // hex
  std::string boot_state;         // "Verified, locked"
  std::vector<std::string> app_packages;
  std::vector<std::string> app_digests;  // hex SHA-256 of the app's signing certificates
  std::string evidence;                  // the evidence JSON that pinned it (re-judged on status list changes)
  int64_t pinned_ms = 0;
  std::string held;              // why a key change waits for the operator ("" : none)
  bool change_approved = false;  // the operator approved: the next valid attestation pins anew
  bool ecdh = false;             // its helper offers `ecdh`: attested_only secrets are sealed to the key
};

struct Processor {
  std::string id;       // Ed25519 public key, lower-case hex
  std::string name;     // what the device calls itself: shown, never trusted (any device may claim any name)
  std::string label;    // the name the operator fixed at approval ("" : none); unique; allow lists may name it
  std::string address;  // the network address its last tunnel or join attempt came from
  ProcessorSpecs specs;
  ProcessorBenchmark benchmark;
  double price_per_day = 0;  // the processor's ask
  bool attested = false;
  // The hub's verdict on the device's last registration: what was attested ("TEE, ...") or why
  // not ("not attested: bootloader_unlocked: ..."). Re-checked at every registration.
  std::string attestation;
  bool simulated = false;  // runs `cellserve agent --simulate`: serves only simulated deployments
  Enrollment enrollment = Enrollment::Enrolled;
  bool online = false;
  int64_t registered_ms = 0;  // first registration; kept by Store::upsert_processor once set
  int64_t last_seen_ms = 0;
  // Battery, heat, throttling and free memory at the agent's last status poll. Live: filled by
  // the hub from memory (Hub's device states), never stored; empty after a hub restart until
  // the device's first poll.
  DeviceState device;
};

// A token that enrols the devices that present it (`cellserve hub tokens create`). The hub keeps
// only its SHA-256; the token itself is shown once.
struct EnrollmentToken {
  std::string hash;  // sha256 of the token, lower-case hex
  std::string label;
  int uses_left = 1;
  int64_t expires_ms = 0;
  int64_t created_ms = 0;
};

// An API key for one deployment's endpoint (`cellserve keys create`). The hub keeps only its
// SHA-256; the key itself is shown once. 0 limits: none.
struct ApiKey {
  std::string id;    // the first 12 hex digits of the hash: how the key is named in lists and logs
  std::string hash;  // sha256 of the key, lower-case hex
  std::string name;
  std::string deployment;
  // The deployment's created_ms: the key opens only the deployment of that name created then, not
  // one created again under the name after a delete. 0: bound at the next hub start (older rows).
  int64_t deployment_created_ms = 0;
  int rpm = 0;                 // requests per minute, across the whole fleet
  int64_t tokens_per_day = 0;  // prompt + completion tokens per UTC day
  int64_t created_ms = 0;
  bool revoked = false;
  // Usage, counted in the store by every hub (quota_store.h); the hub reads it each reconcile round.
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t day = 0;  // the UTC day (days since 1970) day_tokens counts
  int64_t day_tokens = 0;
};

// How a device's answers compared with other devices' and with canaries (fleet/hub/agreement_book.h).
// Kept per device across deployments: a device that lies lies everywhere.
struct DeviceAgreement {
  std::string processor_id;
  int64_t checks = 0;  // spot checks and canaries it took part in, since its last release
  int64_t agreed = 0;  // its answer matched its pair's, the majority's or the canary's
  int64_t lost = 0;    // it disagreed with the majority (a tie-break), or answered a canary wrong
  // The last decided outcomes (agreed or lost), newest in bit 0 (1: agreed), and how many of the
  // window's bits are filled: the quarantine rule reads this window, not the whole history.
  int64_t recent_bits = 0;
  int recent_count = 0;
  bool quarantined = false;
  std::string reason;      // why it was quarantined ("" while not)
  int64_t changed_ms = 0;  // the last change
  bool operator==(const DeviceAgreement&) const = default;
};

// A deployment's canaries (`cellserve deployments canaries`): known requests with expected
// answers the hub mixes into each device's traffic, one per `every` requests the device answers.
struct CanarySet {
  std::string deployment;
  std::string cases;  // JSONL, one {"request": {...}, "expect": "..."} a line, as validated (canary_book.h)
  int every = 50;
  bool operator==(const CanarySet&) const = default;
};

// What a deployment asks of a processor (see matcher.h meets()).
struct Requirements {
  uint64_t min_ram_bytes = 0;
  int min_cores = 0;
  std::string arch;  // empty: any
  double min_decode_tps = 0;
  bool attested_only = false;
  std::vector<std::string> allow;  // processor ids or names; empty: all
  // From the device's live state (DeviceState). A value the device hides does not hold against
  // it: a phone that hides its battery meets charging_only and min_battery.
  bool charging_only = false;    // only devices on a charger
  int min_battery = 0;           // percent; 0: any
  double max_temperature_c = 0;  // the hottest battery or thermal zone reading; 0: any
  bool operator==(const Requirements&) const = default;
};

// Settings passed to the engine on the processor.
// [workload]: what the deployment's requests look like. The agent's autotune measures its
// candidate settings on this work (server/autotune.h), not on toy probes.
struct Workload {
  int prompt_tokens = 0;                 // a typical request's prompt; 0: no workload given
  int max_tokens = 16;                   // its answer's length
  int concurrency = 1;                   // requests a replica gets at once
  std::string objective = "throughput";  // or "latency" (a guard that answers one case at a time)
  int autotune_seconds = 60;             // the time autotune may spend at a load
  bool operator==(const Workload&) const = default;
};

struct EngineSettings {
  int ctx_size = 0;  // 0: the agent decides (all three)
  int parallel = 0;
  int threads = 0;
  std::vector<std::string> lora;  // LoRA adapters, each as fleet/spec encode_lora_ref(): "<sha256> <scale> <url>"
  // [engine] simulated = true: served only by simulated processors (`agent --simulate`), which
  // never fetch the model; a deployment without it is never matched to one.
  bool simulated = false;
  // The rest of `cellserve serve`'s settings, with its flags' meanings (docs/fleet.md, "Spec"):
  // empty or 0 is serve's default.
  std::string chat_template;        // a built-in template's name (--chat-template)
  std::string chat_template_jinja;  // an inline Jinja template (as --chat-template-file's contents)
  std::string kv_type;              // --kv-type: f16, f32 or q8_0
  int batch_size = 0;               // --batch-size: tokens one forward pass may take
  int prefill_chunk = 0;            // --prefill-chunk: prompt tokens read per step between decodes
  bool embeddings = false;          // --embeddings: also serve /v1/embeddings
  std::string pooling;              // --pooling: none, mean, cls or last
  bool mlock = false;               // --mlock: lock the weights in RAM
  bool special_in_content = false;  // --special-in-content: special tokens' text in answers
  Workload workload;                // the spec's [workload] table (kept with the engine: the agent tunes for it)
  bool operator==(const EngineSettings&) const = default;
};

// How the hub's deployment endpoint (/d/<name>/v1) treats the deployment's requests.
struct GatewaySettings {
  std::string alias;             // another name clients may send as `model` ("" : only the name)
  int queue_max = 64;            // requests waiting at the hub while every replica is at capacity
  int queue_timeout_ms = 30000;  // the longest a request waits there before 504
  // Hedging: a non-streamed request with max_tokens <= hedge_max_tokens that has no answer
  // after the hedge delay is also sent to a second replica; the first answer wins. 0: off.
  int hedge_max_tokens = 0;
  int hedge_delay_ms = 0;  // 0: derived from the first replica's estimated time for the request
  // Generation slots across the deployment that batch work leaves free for interactive requests
  // (docs/batch.md): a new one is then served at once, not after a batch line.
  int batch_reserve_slots = 1;
  // The longest the hub waits for a replica's first response byte before it counts the replica
  // as failed and tries another (a device that answers pings but never answers must not hold
  // requests). 0: derived from the request's work (fleet/hub/first_byte_deadline.h).
  int first_byte_timeout_ms = 0;
  // Spot checks (fleet/hub/spot_checks.h): the fraction of eligible requests (greedy, or with a
  // seed) the hub also sends to a second device to compare the answers; 0: none. And the part of
  // the answer compared: "text" (the whole text) or "first_line" (a verdict model's first line).
  double verify_fraction = 0;
  std::string verify_agreement = "text";
  bool operator==(const GatewaySettings&) const = default;
};

// A window of the deployment's [[schedule]]: from each minute `cron` names (UTC; fleet/spec
// cron_schedule.h) and for `for_s` seconds, at least `replicas` replicas.
struct ScheduleWindow {
  std::string cron;
  int replicas = 0;
  int64_t for_s = 0;
  bool operator==(const ScheduleWindow&) const = default;
};

// Autoscaling (docs/autoscale.md): the hub moves the deployment's replica count between
// min_replicas and max_replicas by the queue's wait and the batches' deadlines, within the budget.
// max_replicas == 0: off (the count is `replicas`, as the operator scales it).
struct AutoscaleSettings {
  int min_replicas = 0;
  int max_replicas = 0;
  double max_total_price_per_day = 0;  // the replicas' prices together; 0: no total budget
  double target_wait_s = 10;           // a request's longest wait in the queue before a replica is added
  int64_t batch_deadline_s = 0;        // each batch ends this long after its creation; 0: none
  double cooldown_s = 300;             // a replica idle this long (and none added since) is removed
  std::vector<ScheduleWindow> schedules;
  bool enabled() const { return max_replicas > 0; }
  bool operator==(const AutoscaleSettings&) const = default;
};

// What a replica row's processor loads: the model and the engine settings. A row keeps the
// serving it was created or last reloaded with, so a deployment whose spec changed serves the old
// model from its old rows until the rolling update (fleet/hub/rollout.h) replaces them.
struct Serving {
  std::string model_url;
  std::string model_sha256;
  EngineSettings engine;
  bool operator==(const Serving&) const = default;
};

// One deployment's spec. It is one document: fleet/spec/deployment_spec.cpp reads and writes it
// (the TOML file, the API's JSON and the stored document), and the store keeps that document
// whole. A new field here (or in Requirements, EngineSettings, GatewaySettings) goes, with its
// default stated once here, into spec_fields() there, into the API form there if clients set it,
// into tests/fleet/every_field_spec.h (which stops compiling until it does) and docs/fleet.md.
// An engine setting also reaches the agent: the assignment carries the same engine section, read
// with the agent's bounds in fleet/spec/agent_protocol.cpp, and fleet/agent/replica_runtime.cpp
// turns it into server::ServeStackOptions (whose defaults stand for 0, "the agent decides").
struct DeploymentSpec {
  std::string name;  // [a-z0-9-]{1,40}, unique
  std::string model_url;
  std::string model_sha256;  // 64 lower-case hex
  Requirements requirements;
  int replicas = 1;
  int spares = 0;
  double max_price_per_day = 0;
  EngineSettings engine;
  GatewaySettings gateway;
  AutoscaleSettings autoscale;  // replicas is then the count the autoscaler last chose
  std::vector<std::pair<std::string, std::string>> env;
  bool operator==(const DeploymentSpec&) const = default;
};

// The serving that `spec` asks for now.
inline Serving serving_of(const DeploymentSpec& spec) { return {spec.model_url, spec.model_sha256, spec.engine}; }

struct Deployment {
  DeploymentSpec spec;
  int64_t created_ms = 0;
  // Raised by the store whenever spec.env changes (update_deployment_spec): a replica takes
  // gateway traffic only once its device acknowledged opening this version of the secrets.
  int64_t secrets_version = 1;
};

enum class ReplicaState { Unmatched, Matched, Downloading, Loading, Tuning, Ready, Failed, Offline };

// Returns the lower-case name of `state` ("unmatched", "matched", "downloading", "loading",
// "tuning", "ready", "failed", "offline"); a static string.
const char* replica_state_name(ReplicaState state);

// Returns the state whose replica_state_name() is `name`, or nullopt.
std::optional<ReplicaState> parse_replica_state(std::string_view name);

struct Replica {
  std::string deployment;
  // 0..replicas-1 serve at /d/<dep>/r/<index>; replicas..replicas+spares-1 are spares; from
  // kSurgeIndexBase, a rolling update's new row for index - kSurgeIndexBase.
  int index = 0;
  std::string processor_id;  // empty when unmatched
  double price_per_day = 0;  // the matched processor's ask at match time
  ReplicaState state = ReplicaState::Unmatched;
  double progress = 0;                     // download fraction 0..1
  std::string detail;                      // last error or note
  double prefill_tps = 0, decode_tps = 0;  // measured after load
  int64_t matched_ms = 0;
  int64_t ready_since_ms = 0;  // start of the current served interval, 0 when not serving
  double cost = 0;             // accrued over closed served intervals
  bool draining = false;       // takes no new requests at the deployment endpoint (drain, scale down)
  // Drained by a rolling update that reloads this row's processor in place (no free device to
  // surge onto); it takes no new requests either, and is reloaded once idle.
  bool reloading = false;
  Serving serving;  // what the processor loads for this row
  // The deployment's secrets version this row's device last acknowledged opening (0: none).
  int64_t secrets_version = 0;
};

// One stretch of time during which a processor served a replica of a deployment with a model:
// from the replica row turning Ready on it until the row left Ready, moved to another processor
// or model, was removed, or the processor went offline or stopped being enrolled. The hub's
// record of who could have signed which answers (`cellserve verify --hub`).
struct ServiceInterval {
  std::string processor_id;
  std::string deployment;
  int index = 0;
  std::string model_sha256;
  int64_t from_ms = 0;
  int64_t until_ms = 0;  // 0 while it lasts
};

// Where a rolling update's surge rows start: past every replica and spare index a spec allows
// (kMaxReplicas + kMaxSpares in fleet/spec), so scaling never meets one.
inline constexpr int kSurgeIndexBase = 2000;

// Milliseconds in one day: the unit of price_per_day.
inline constexpr int64_t kMsPerDay = 24LL * 60 * 60 * 1000;

}  // namespace cellserve::fleet
