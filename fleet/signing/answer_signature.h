// Signed answers: every answer a replica serves carries its device's Ed25519 signature over what
// was asked, what was answered, with which model and adapters, for which deployment and when, so
// a fraud team can later prove which device produced a decision (`cellserve verify`).
//
//   JSON answers: the header X-Cellserve-Signature holds the record as compact JSON; the response
//                 digest covers the body's bytes.
//   SSE streams:  an SSE comment line, which every SSE client ignores, ending its own block:
//                   : cellserve-signature {...}\n\n
//                 just before "data: [DONE]" (chat and text completions), or as the stream's last
//                 bytes where there is no [DONE] (/v1/responses, /completion). The response digest
//                 covers every byte of the stream before the comment line; after it comes nothing
//                 but "data: [DONE]". No data event is added: a stream stays a plain OpenAI stream.
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
// The start of the SSE comment line that carries a stream's record.
inline constexpr std::string_view kSignatureCommentPrefix = ": cellserve-signature ";

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

// The SSE comment line (with the blank line that ends its block) that carries `s` in a stream.
std::string signature_comment(const AnswerSignature& s);

// A saved SSE body split at its signature comment (the last line that starts with
// kSignatureCommentPrefix): the bytes the response digest covers, and the record. NotFound when
// the stream carries none (a broken or unsigned stream); InvalidArgument when the comment is
// malformed or anything but "data: [DONE]" (and line breaks) follows it, since those bytes would
// not be covered.
Result<std::pair<std::string_view, AnswerSignature>> split_signed_stream(std::string_view body);

// True when `s.signature` is `s.device`'s signature of signed_message(s).
bool signature_valid(const AnswerSignature& s);

}  // namespace cellserve::fleet
