// `cellserve verify --request req.json --response resp [--signature JSON] [--hub URL]`: checks a
// saved exchange against the signature the answering device put on it (fleet/signing). The
// response file is the body (an SSE stream carries its own signature event; a JSON answer needs
// its X-Cellserve-Signature header, from --signature or from a file saved with `curl -i`, whose
// header block is read). With --hub, the signing key must be a device that hub knows. Exit 0 and
// one line naming the device, model and time when everything matches; 1 and the reason if not.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "fleet/download/sha256.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/signing/answer_signature.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

constexpr size_t kMaxExchangeFile = 256u << 20;

Result<std::string> read_whole(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(std::string(what) + " " + path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.size() > kMaxExchangeFile) return Status::invalid_argument(std::string(what) + " " + path + ": too large");
  return text;
}

// A response saved with its status line and headers (curl -i): the signature header (if any) and
// the body. 1xx blocks (100 Continue) before the final one are skipped.
struct SavedResponse {
  std::string signature_header;
  std::string body;
};
SavedResponse split_http(std::string text) {
  SavedResponse out;
  while (text.starts_with("HTTP/")) {
    size_t end = text.find("\r\n\r\n");
    size_t skip = 4;
    if (const size_t lf = text.find("\n\n"); lf != std::string::npos && (end == std::string::npos || lf < end)) {
      end = lf;
      skip = 2;
    }
    if (end == std::string::npos) break;
    const std::string head = text.substr(0, end);
    text = text.substr(end + skip);
    const size_t space = head.find(' ');
    if (space != std::string::npos && head.compare(space + 1, 1, "1") == 0) continue;  // 100 Continue
    std::istringstream lines(head);
    std::string line;
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name != fleet::kAnswerSignatureHeader) continue;
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      out.signature_header = line.substr(v);
    }
    break;
  }
  out.body = std::move(text);
  return out;
}

std::string utc_time(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

struct VerifyArgs {
  std::string request;
  std::string response;
  std::string signature;
  std::string hub;
};

int fail(const std::string& why) {
  std::fprintf(stderr, "cellserve verify: %s\n", why.c_str());
  return 1;
}

int run_verify(const VerifyArgs& args) {
  auto request = read_whole(args.request, "--request");
  if (!request.ok()) return fail(request.status().message());
  auto response_text = read_whole(args.response, "--response");
  if (!response_text.ok()) return fail(response_text.status().message());
  SavedResponse response = split_http(std::move(response_text).value());

  fleet::AnswerSignature sig;
  std::string response_sha256;
  auto streamed = fleet::split_signed_stream(response.body);
  if (streamed.ok()) {
    sig = streamed->second;
    response_sha256 = fleet::sha256_hex(streamed->first);
  } else if (streamed.status().code() != StatusCode::NotFound) {
    return fail(streamed.status().message());
  } else {
    const std::string& header = args.signature.empty() ? response.signature_header : args.signature;
    if (header.empty()) {
      return fail(
          "no signature: the response is not a signed stream, and no X-Cellserve-Signature header was "
          "saved with it (--signature, or save the answer with curl -i)");
    }
    auto parsed = fleet::answer_signature_from_json(header);
    if (!parsed.ok()) return fail(parsed.status().message());
    sig = std::move(parsed).value();
    response_sha256 = fleet::sha256_hex(response.body);
  }
  if (!fleet::signature_valid(sig)) {
    return fail(
        "the signature does not match its record: the device, model, adapters, deployment or time was "
        "altered, or another key signed it");
  }
  if (response_sha256 != sig.response_sha256) return fail("the response is not the one signed: it was altered");
  // The deployment endpoint names the deployment in "model" when a client used its alias.
  if (fleet::sha256_hex(*request) != sig.request_sha256 &&
      fleet::sha256_hex(fleet::with_model(*request, sig.deployment)) != sig.request_sha256) {
    return fail("the request is not the one this answer was signed for");
  }
  std::string who = "device " + sig.device.substr(0, 16);
  if (!args.hub.empty()) {
    auto listed = hub_request(args.hub, "GET", "/api/v1/processors");
    if (!listed.ok()) return fail("the hub: " + listed.status().message());
    const json::value* found = nullptr;
    if (const json::value* list = listed->as_object().if_contains("processors"); list && list->is_array()) {
      for (const json::value& p : list->as_array()) {
        if (p.is_object() && json_string(p.as_object(), "id") == sig.device) found = &p;
      }
    }
    if (found == nullptr) return fail("the signing key " + sig.device.substr(0, 16) + "… is no device of this hub");
    who = "device " + json_string(found->as_object(), "name") + " (" + sig.device.substr(0, 16) + ", " +
          json_string(found->as_object(), "enrollment") + " at the hub)";
  } else {
    who += " (key not checked against a hub: pass --hub)";
  }
  std::string adapters;
  for (const std::string& a : sig.adapter_sha256) adapters += (adapters.empty() ? "" : ", ") + a.substr(0, 12);
  std::printf("valid: %s answered for deployment %s at %s with model %s%s\n", who.c_str(), sig.deployment.c_str(),
              utc_time(sig.time_ms).c_str(), sig.model_sha256.c_str(),
              adapters.empty() ? "" : (" and adapters " + adapters).c_str());
  return 0;
}

}  // namespace

void add_verify_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd =
      app.add_subcommand("verify", "Check a saved request and answer against the answering device's signature");
  cmd->add_option("--request", args->request, "The request body as sent (JSON)")->required();
  cmd->add_option("--response", args->response, "The answer: its body, or as saved by curl -i")->required();
  cmd->add_option("--signature", args->signature, "A JSON answer's X-Cellserve-Signature header value");
  cmd->add_option("--hub", args->hub, "Check the signing key against this hub's devices ($CELLSERVE_HUB_KEY)");
  cmd->callback([args, exit_code] { *exit_code = run_verify(*args); });
}

}  // namespace cellserve::cli
