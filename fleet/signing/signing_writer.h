// The writer a replica's answers go through on the device: it signs each one
// (answer_signature.h). A whole response gets the X-Cellserve-Signature header; an event stream
// gets the signature comment just before its "data: [DONE]", or, when it ends (end_stream)
// without one, as its last bytes. An aborted stream, or a streamed body that is not SSE, is not
// signed: there is no whole answer to vouch for, or no place a client would pass over.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "fleet/crypto/sha256.h"
#include "fleet/signing/answer_signature.h"
#include "net/http_types.h"

namespace cellserve::fleet {

// Who signs and for what: the device and what its replica serves.
struct AnswerSigner {
  std::string device;  // identity public key, hex
  std::function<std::string(std::string_view message)> sign;
  std::string deployment;
  std::string model_sha256;
  std::vector<std::string> adapter_sha256;
};

class SigningWriter final : public net::ResponseWriter {
 public:
  // `request_body`: the body the replica received (its digest is signed).
  SigningWriter(net::ResponseWriter& out, const AnswerSigner& signer, std::string_view request_body);

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override;
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override;
  bool write(std::string_view data) override;
  void end_stream() override;
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override { return out_.client_gone(); }

 private:
  AnswerSignature sign(const std::string& response_sha256) const;
  // Writes the signature comment over every byte so far (once).
  bool write_signature();

  net::ResponseWriter& out_;
  const AnswerSigner& signer_;
  std::string request_sha256_;
  Sha256 stream_;  // every byte of the stream written before the signature
  bool event_stream_ = false;
  bool signed_ = false;
};

}  // namespace cellserve::fleet
