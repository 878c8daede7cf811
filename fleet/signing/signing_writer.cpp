#include "fleet/signing/signing_writer.h"

#include <chrono>

namespace cellserve::fleet {
namespace {

constexpr std::string_view kDone = "data: [DONE]";

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SigningWriter::SigningWriter(net::ResponseWriter& out, const AnswerSigner& signer, std::string_view request_body)
    : out_(out), signer_(signer), request_sha256_(sha256_hex(request_body)) {}

AnswerSignature SigningWriter::sign(const std::string& response_sha256) const {
  AnswerSignature s;
  s.deployment = signer_.deployment;
  s.device = signer_.device;
  s.model_sha256 = signer_.model_sha256;
  s.adapter_sha256 = signer_.adapter_sha256;
  s.time_ms = unix_ms();
  s.request_sha256 = request_sha256_;
  s.response_sha256 = response_sha256;
  s.signature = signer_.sign(signed_message(s));
  return s;
}

void SigningWriter::send(int status, std::string_view type, std::string body, const net::HeaderList& headers) {
  net::HeaderList signed_headers = headers;
  signed_headers.emplace_back(std::string(kAnswerSignatureHeader), answer_signature_json(sign(sha256_hex(body))));
  out_.send(status, type, std::move(body), signed_headers);
}

bool SigningWriter::begin_stream(int status, std::string_view type, const net::HeaderList& headers) {
  event_stream_ = type.starts_with("text/event-stream");
  return out_.begin_stream(status, type, headers);
}

bool SigningWriter::write_signature() {
  signed_ = true;
  return out_.write(signature_comment(sign(stream_.hex_digest())));
}

bool SigningWriter::write(std::string_view data) {
  // The server writes [DONE] on its own (server/api/job_io.cpp), after the last event.
  if (event_stream_ && !signed_ && data.starts_with(kDone) && !write_signature()) return false;
  if (!signed_) stream_.update(data);
  return out_.write(data);
}

void SigningWriter::end_stream() {
  // /v1/responses and /completion streams have no [DONE]: the comment is their last line.
  if (event_stream_ && !signed_) (void)write_signature();  // a client that left gets no end anyway
  out_.end_stream();
}

}  // namespace cellserve::fleet
