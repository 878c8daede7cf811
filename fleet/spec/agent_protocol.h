// What the hub and an agent say to each other. The agent opens the connection:
//   1. GET  /agent/v1/challenge               → {"challenge": "<64 hex>"} (single use, 60 s)
//   2. GET  /agent/v1/tunnel with Upgrade: cellserve-tunnel/1 and the headers
//        X-Cellserve-Agent (its public key), X-Cellserve-Challenge, X-Cellserve-Signature
//        (Ed25519 over tunnel_signature_message(origin, challenge)), X-Cellserve-Origin
//        → 101, then HTTP/2 with the hub
//        as client (fleet/tunnel).
// Through the tunnel the hub asks (hub → agent):
//   GET /agent/info         → AgentInfo: name, ask, specs, benchmark, simulated, attestation
//   GET /agent/status       → {"replicas": [ReplicaReport...]}     (every poll: the heartbeat)
//   PUT /agent/assignments  ← {"assignments": [AssignmentMessage...]} (the full desired set)
//   *   /d/<deployment>/r/<index>/v1/...   users' OpenAI requests for a replica it serves
// Readers of the peer's JSON never trust it: a wrong type is an error naming the field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

inline constexpr std::string_view kChallengePath = "/agent/v1/challenge";
inline constexpr std::string_view kTunnelPath = "/agent/v1/tunnel";
inline constexpr std::string_view kTunnelProtocol = "cellserve-tunnel/1";
inline constexpr std::string_view kAgentInfoPath = "/agent/info";
inline constexpr std::string_view kAgentStatusPath = "/agent/status";
inline constexpr std::string_view kAgentAssignmentsPath = "/agent/assignments";

// The hub origin an agent dialed, as it signs it: "http(s)://host:port", lower-case, the port
// always written. Sent beside the signature as X-Cellserve-Origin.
std::string hub_origin(bool tls, std::string_view host, int port);
inline constexpr std::string_view kOriginHeader = "x-cellserve-origin";

// The bytes an agent signs to open a tunnel: the protocol, the hub origin it dialed and the
// hub's challenge. With the origin bound, a hub that relays another hub's challenge to an agent
// gets a signature that opens no tunnel at that other hub (it names the relaying hub).
std::string tunnel_signature_message(std::string_view origin, std::string_view challenge);

// A challenge as hubs issue them: 64 lower-case hex digits. An agent signs nothing else, so a
// hostile hub cannot have it sign a message of the hub's choosing.
bool valid_challenge(std::string_view challenge);

struct AgentInfo {
  std::string name;
  double price_per_day = 0;
  ProcessorSpecs specs;
  ProcessorBenchmark benchmark;
  std::string version;
  bool simulated = false;  // `agent --simulate`: a paced simulator, no real model
  // Android Key Attestation evidence for this registration's challenge (docs/attestation.md),
  // as the agent's --attestation-command printed it; null when the device presents none. The
  // hub reads it with fleet/attest (bounded there).
  boost::json::value attestation;
};

// The settings a loaded replica runs with: what the agent's autotune chose (threads, prefill
// chunk), or what it was given when autotune is off, beside the spec's parallel and context.
struct TunedSettings {
  int threads = 0;
  int prefill_chunk = 0;  // prompt tokens per scheduler step
  int parallel = 0;       // requests it runs at once
  int ctx_size = 0;       // tokens of KV cache, all slots together
  int batch_size = 0;     // the engine's most tokens per forward pass
  bool autotuned = false;
  std::string kv_type;  // the KV cache type in use ("" from an older agent)
  bool cached = false;  // autotune's choice was reused from an earlier load (same model, device, workload)
};
// A peer's settings' bounds: beyond them the report is refused.
inline constexpr int kMaxTunedThreads = 1024;
inline constexpr int kMaxTunedChunk = 1 << 20;
inline constexpr int kMaxTunedCtx = 1 << 26;

struct ReplicaReport {
  std::string deployment;
  int index = 0;
  ReplicaState state = ReplicaState::Matched;
  double progress = 0;
  std::string detail;
  double prefill_tps = 0;
  double decode_tps = 0;
  int slots = 0;       // requests the replica runs at once (0: not loaded, or an older agent)
  int free_slots = 0;  // of those, not running a request now
  // The prompts its slots are reading now (those that have not produced a token yet): tokens
  // read so far and in all, less what the prefix cache supplied. A device in the middle of a
  // 7,000-token prefill says so, so the hub sends a short request elsewhere rather than behind it.
  int prefill_done = 0;
  int prefill_total = 0;
  // The device stopped trying (the model failed to load, or its download failed for good): the
  // hub moves the replica to another device. False while it still retries (state Failed between
  // download attempts).
  bool gave_up = false;
  // The model the report is about (the assignment's sha256; "" from an older agent). The hub
  // ignores a report for a model the row no longer serves: the device still runs the old one
  // until the new assignment reaches it.
  std::string model_sha256;
  // The deployment's secrets version the agent opened for this replica (0: none yet, or they
  // did not open), and the proof that it opened them: secrets_ack_proof() under the ack_key
  // found inside the sealed box, over the assignment's secrets_challenge. Only a device that
  // opened the box knows the key (a hash of the ciphertext, which anyone relaying it has, proves
  // nothing). The hub routes traffic only to a replica whose device proved it opened what was
  // sealed to it for the current version.
  int secrets_version = 0;
  std::string secrets_proof;
  std::optional<TunedSettings> tuned;  // once loaded ("tuned" on the wire; absent or null before)
};

// A report's prompt tokens in progress fit this (slots times the largest context, with room).
inline constexpr int kMaxReportedPrefillTokens = 1 << 30;

// Secrets versions fit an int on the wire; the hub's store counts one per [env] change.
inline constexpr int kMaxSecretsVersion = 1 << 30;
// A sealed_secrets field's bound (hex): the spec allows 64 variables of 4 KiB each.
inline constexpr size_t kMaxSealedSecretsBytes = 1 << 20;

struct AssignmentMessage {
  std::string deployment;
  int index = 0;
  std::string model_url;
  std::string model_sha256;
  EngineSettings engine;
  // On a closed hub, the agent's bearer token for the hub's /files/ (its models and adapters);
  // "" on an open hub. Not part of what the replica loads: a new token reloads nothing.
  std::string files_token;
  // The deployment's secrets (secrets_payload(), below) at `secrets_version`, sealed to this
  // device's identity (seal_to_device in fleet/crypto/identity.h). Only the device opens it; it
  // keeps the values in memory. A new version reloads nothing.
  int secrets_version = 0;
  std::string sealed_secrets;
  std::string secrets_challenge;  // 64 hex digits, fresh for each seal: what the proof covers
};

// What a sealed_secrets field holds: the key the replica requires of every request (the hub
// sends it as the bearer token; nobody else has it), and the spec's [env] values.
struct DeploymentSecrets {
  std::string replica_key;
  std::vector<std::pair<std::string, std::string>> env;
  std::string ack_key;  // 64 hex digits, fresh for each seal: the key of the acknowledgement
};

// A device's acknowledgement that it opened secrets version `version` of `deployment`: HMAC-SHA-256
// under the sealed ack_key (its hex text as the key) of
// "cellserve-secrets-ack/1 <deployment> <version> <challenge>". The hub computes it when it seals.
std::string secrets_ack_proof(std::string_view ack_key, std::string_view deployment, int version,
                              std::string_view challenge);
std::string secrets_payload(const DeploymentSecrets& secrets);
Result<DeploymentSecrets> secrets_from_payload(std::string_view payload);

boost::json::value to_json(const AgentInfo& info);
Result<AgentInfo> agent_info_from_json(const boost::json::value& v);

boost::json::value to_json(const TunedSettings& t);
Result<TunedSettings> tuned_settings_from_json(const boost::json::value& v);
boost::json::value to_json(const std::vector<ReplicaReport>& reports);
Result<std::vector<ReplicaReport>> replica_reports_from_json(const boost::json::value& v);

boost::json::value to_json(const std::vector<AssignmentMessage>& assignments);
Result<std::vector<AssignmentMessage>> assignments_from_json(const boost::json::value& v);

// Parses `text` as JSON; InvalidArgument "<what>: not JSON: ..." otherwise.
Result<boost::json::value> parse_json(std::string_view text, const std::string& what);

}  // namespace cellserve::fleet
