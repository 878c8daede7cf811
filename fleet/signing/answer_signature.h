// Signed answers: every answer a replica serves carries its device's Ed25519 signature over what
// was asked, what was answered, with which model and adapters, for which deployment and when, so
// a fraud team can later prove which device produced a decision (`cellserve verify`).
//
//   JSON answers: the header X-Cellserve-Signature holds the record as compact JSON.
//   SSE streams:  a last data event before "data: [DONE]",
//                 data: {"object":"cellserve.signature","choices":[],"cellserve_signature":{...}}
//                 (an empty `choices`, like a usage chunk, so OpenAI clients pass over it); the
//                 response digest covers every byte of the stream before that event.
// The request digest is over the body the replica received: the deployment endpoint sets
// "model" to the deployment's name when a client used its alias (verify tries both).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

inline constexpr std::string_view kAnswerSignatureHeader = "x-cellserve-signature";
inline constexpr std::string_view kSignatureEventObject = "cellserve.signature";

struct AnswerSignature {
  std::string deployment;
  std::string device;                       // the signer: its identity public key, 64 hex digits
  std::string model_sha256;                 // the model the replica loaded
  std::vector<std::string> adapter_sha256;  // its LoRA adapters, in load order
  int64_t time_ms = 0;                      // Unix time of signing, milliseconds
  std::string request_sha256;               // of the request body as the replica received it
  std::string response_sha256;              // of the JSON body, or of the stream before the event
  std::string signature;                    // Ed25519 over signed_message(), 128 hex digits
};

// The exact bytes signed: one "key=value" line per field after a version line, so no field can
// be moved into another.
std::string signed_message(const AnswerSignature& s);

// The record as compact JSON ({"v":1,...}), and back. Reading checks every field's shape (hex
// digests, a device key, a bounded adapter list) but not the signature.
std::string answer_signature_json(const AnswerSignature& s);
Result<AnswerSignature> answer_signature_from_json(std::string_view text);

// The SSE event that carries `s` at the end of a stream.
std::string signature_event(const AnswerSignature& s);

// A saved SSE body split at its signature event: the bytes the response digest covers, and the
// record. NotFound when the stream carries none (a broken or unsigned stream).
Result<std::pair<std::string_view, AnswerSignature>> split_signed_stream(std::string_view body);

// True when `s.signature` is `s.device`'s signature of signed_message(s).
bool signature_valid(const AnswerSignature& s);

}  // namespace cellserve::fleet
