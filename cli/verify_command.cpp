// `cellserve verify`: checks a saved answer against the signature the answering device put on it
// (fleet/signing), and with --hub that the device served that deployment and model when it signed.
//
//   verify --request req.json --response resp [--signature JSON] (--hub URL | --allow-unknown-key)
//     The response file is the body (an SSE stream carries its own signature comment; a JSON
//     answer needs its X-Cellserve-Signature header, from --signature or from a file saved with
//     `curl -i`, whose header block is read).
//   verify --batch-input in.jsonl --batch-output out.jsonl [--custom-id ID] (--hub URL | ...)
//     Each line of a batch's output file (or the one with that custom_id) against its signature
//     record (response.cellserve_signature) and its request in the batch's input file.
//
// Without --hub the signing key is any key at all, so verify fails unless --allow-unknown-key
// says that is enough. Exit 0 and one line per answer naming the device, model and time when
// everything matches; 1 and the reason if not.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "fleet/batch/batch_json.h"
#include "fleet/crypto/sha256.h"
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
  std::string batch_input;
  std::string batch_output;
  std::string custom_id;
  std::string hub;
  bool allow_unknown_key = false;
  int64_t max_clock_skew_s = 60;
};

int verify_failed(const std::string& why) {
  std::fprintf(stderr, "cellserve verify: %s\n", why.c_str());
  return 1;
}

// The record's own signature, and that it was made over `response` and `request` (or `request`
// with "model" set to the deployment, which the deployment endpoint forwards for an alias).
Status check_record(const fleet::AnswerSignature& sig, std::string_view response, std::string_view request) {
  if (!fleet::signature_valid(sig)) {
    return Status::invalid_argument(
        "the signature does not match its record: the device, model, adapters, deployment or time was "
        "altered, or another key signed it");
  }
  if (fleet::sha256_hex(response) != sig.response_sha256) {
    return Status::invalid_argument("the response is not the one signed: it was altered");
  }
  if (fleet::sha256_hex(request) != sig.request_sha256 &&
      fleet::sha256_hex(fleet::with_model(request, sig.deployment)) != sig.request_sha256) {
    return Status::invalid_argument("the request is not the one this answer was signed for");
  }
  return {};
}

// Who signed, as checked against the hub: the device must have served the record's deployment
// with the record's model at the record's time (within the clock skew allowed between device and
// hub), which it does only while enrolled. Without a hub, only --allow-unknown-key accepts it.
Result<std::string> check_signer(const VerifyArgs& args, const fleet::AnswerSignature& sig) {
  const std::string key = sig.device.substr(0, 16) + "…";
  if (args.hub.empty()) {
    if (!args.allow_unknown_key) {
      return Status(StatusCode::PermissionDenied,
                    "the signing key " + key +
                        " was not checked against a hub: pass --hub URL, or --allow-unknown-key to "
                        "accept a signature by any key");
    }
    return "device " + sig.device.substr(0, 16) + " (key not checked against a hub: --allow-unknown-key)";
  }
  const int64_t skew = args.max_clock_skew_s * 1000;
  const int64_t from = sig.time_ms > skew ? sig.time_ms - skew : 0;
  auto history = hub_request(args.hub, "GET",
                             "/api/v1/processors/" + sig.device + "/history?from_ms=" + std::to_string(from) +
                                 "&until_ms=" + std::to_string(sig.time_ms + skew));
  if (!history.ok()) {
    if (history.status().code() == StatusCode::NotFound) {
      return Status(StatusCode::PermissionDenied,
                    "the signing key " + key + " is no device of this hub (" + history.status().message() + ")");
    }
    return Status::unavailable("the hub: " + history.status().message());
  }
  const json::object& h = history->as_object();
  const json::value* service = h.if_contains("service");
  if (service != nullptr && service->is_array()) {
    for (const json::value& v : service->as_array()) {
      if (!v.is_object()) continue;
      const json::object& i = v.as_object();
      // The hub selected the intervals that overlap [time - skew, time + skew].
      if (json_string(i, "deployment") == sig.deployment && json_string(i, "model_sha256") == sig.model_sha256) {
        return "device " + json_string(h, "name") + " (" + sig.device.substr(0, 16) + ", " +
               json_string(h, "enrollment") + " at the hub now)";
      }
    }
  }
  return Status(StatusCode::PermissionDenied,
                "device " + key + " (" + json_string(h, "enrollment") + " at the hub) was not serving deployment " +
                    sig.deployment + " with model " + sig.model_sha256.substr(0, 12) + "… at " + utc_time(sig.time_ms) +
                    ": it was not enrolled and assigned then, or its clock is off by more than " +
                    std::to_string(args.max_clock_skew_s) + " s");
}

void print_valid(const std::string& prefix, const std::string& who, const fleet::AnswerSignature& sig) {
  std::string adapters;
  for (const std::string& a : sig.adapter_sha256) adapters += (adapters.empty() ? "" : ", ") + a.substr(0, 12);
  std::printf("%svalid: %s answered for deployment %s at %s with model %s%s\n", prefix.c_str(), who.c_str(),
              sig.deployment.c_str(), utc_time(sig.time_ms).c_str(), sig.model_sha256.c_str(),
              adapters.empty() ? "" : (" and adapters " + adapters).c_str());
}

int verify_exchange(const VerifyArgs& args) {
  auto request = read_whole(args.request, "--request");
  if (!request.ok()) return verify_failed(request.status().message());
  auto response_text = read_whole(args.response, "--response");
  if (!response_text.ok()) return verify_failed(response_text.status().message());
  SavedResponse response = split_http(std::move(response_text).value());

  fleet::AnswerSignature sig;
  std::string_view signed_bytes = response.body;
  auto streamed = fleet::split_signed_stream(response.body);
  if (streamed.ok()) {
    sig = streamed->second;
    signed_bytes = streamed->first;
  } else if (streamed.status().code() != StatusCode::NotFound) {
    return verify_failed(streamed.status().message());
  } else {
    const std::string& header = args.signature.empty() ? response.signature_header : args.signature;
    if (header.empty()) {
      return verify_failed(
          "no signature: the response is not a signed stream, and no X-Cellserve-Signature header was "
          "saved with it (--signature, or save the answer with curl -i)");
    }
    auto parsed = fleet::answer_signature_from_json(header);
    if (!parsed.ok()) return verify_failed(parsed.status().message());
    sig = std::move(parsed).value();
  }
  if (Status s = check_record(sig, signed_bytes, *request); !s.ok()) return verify_failed(s.message());
  auto who = check_signer(args, sig);
  if (!who.ok()) return verify_failed(who.status().message());
  print_valid("", *who, sig);
  return 0;
}

// A JSONL file as custom_id → the line's JSON object; lines without one are skipped.
Result<std::map<std::string, json::object>> lines_by_custom_id(const std::string& path, const char* what) {
  CS_ASSIGN_OR_RETURN(std::string text, read_whole(path, what));
  std::map<std::string, json::object> out;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object())
      return Status::invalid_argument(std::string(what) + " line " + std::to_string(n) + ": not JSON");
    const std::string id = json_string(v.as_object(), "custom_id");
    if (id.empty()) continue;
    out[id] = std::move(v.as_object());
  }
  return out;
}

// One batch output line against its record and its input line.
Result<std::pair<std::string, fleet::AnswerSignature>> verify_batch_line(const VerifyArgs& args,
                                                                         const json::object& output,
                                                                         const json::object* input) {
  const json::value* response = output.if_contains("response");
  if (response == nullptr || !response->is_object()) return Status::invalid_argument("the line has no response");
  const json::object& r = response->as_object();
  const json::value* record = r.if_contains("cellserve_signature");
  if (record == nullptr) return Status::not_found("the line carries no signature (response.cellserve_signature)");
  CS_ASSIGN_OR_RETURN(fleet::AnswerSignature sig, fleet::answer_signature_from_json(json::serialize(*record)));
  const json::value* body = r.if_contains("body");
  if (body == nullptr) return Status::invalid_argument("the line's response has no body");
  // The bytes the device sent: kept verbatim when the body's compact JSON differs from them; the
  // body shown must be those bytes, parsed.
  std::string answer = json::serialize(*body);
  if (const json::value* exact = r.if_contains("cellserve_body")) {
    if (!exact->is_string()) return Status::invalid_argument("response.cellserve_body is not a string");
    if (json::serialize(fleet::batch_body_value(exact->as_string())) != answer) {
      return Status::invalid_argument("response.body is not the answer the device signed");
    }
    answer = std::string(exact->as_string());
  }
  if (input == nullptr) return Status::not_found("the batch input has no line with this custom_id");
  const json::value* request = input->if_contains("body");
  if (request == nullptr) return Status::invalid_argument("the input line has no body");
  // The hub forwards the input line's body as compact JSON (fleet/hub/batch_runner.cpp).
  CS_RETURN_IF_ERROR(check_record(sig, answer, json::serialize(*request)));
  CS_ASSIGN_OR_RETURN(std::string who, check_signer(args, sig));
  return std::pair<std::string, fleet::AnswerSignature>(std::move(who), std::move(sig));
}

int verify_batch(const VerifyArgs& args) {
  auto inputs = lines_by_custom_id(args.batch_input, "--batch-input");
  if (!inputs.ok()) return verify_failed(inputs.status().message());
  auto text = read_whole(args.batch_output, "--batch-output");
  if (!text.ok()) return verify_failed(text.status().message());
  std::istringstream lines(*text);
  std::string line;
  int checked = 0, failed = 0;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) return verify_failed("--batch-output line " + std::to_string(n) + ": not JSON");
    const std::string id = json_string(v.as_object(), "custom_id");
    if (!args.custom_id.empty() && id != args.custom_id) continue;
    const auto in = inputs->find(id);
    auto result = verify_batch_line(args, v.as_object(), in == inputs->end() ? nullptr : &in->second);
    ++checked;
    const std::string prefix = "line " + std::to_string(n) + " (" + id.substr(0, 64) + "): ";
    if (!result.ok()) {
      ++failed;
      std::fprintf(stderr, "cellserve verify: %s%s\n", prefix.c_str(), result.status().message().c_str());
      continue;
    }
    print_valid(prefix, result->first, result->second);
  }
  if (checked == 0) {
    return verify_failed(args.custom_id.empty() ? "--batch-output has no lines"
                                                : "--batch-output has no line with custom_id " + args.custom_id);
  }
  return failed == 0 ? 0 : 1;
}

int run_verify(const VerifyArgs& args) {
  const bool exchange = !args.request.empty() || !args.response.empty();
  const bool batch = !args.batch_input.empty() || !args.batch_output.empty();
  if (exchange == batch) {
    return verify_failed("give either --request and --response, or --batch-input and --batch-output");
  }
  if (args.max_clock_skew_s < 0 || args.max_clock_skew_s > 86400) {
    return verify_failed("--max-clock-skew must be 0..86400 seconds");
  }
  if (exchange) {
    if (args.request.empty() || args.response.empty()) return verify_failed("--request and --response go together");
    return verify_exchange(args);
  }
  if (args.batch_input.empty() || args.batch_output.empty())
    return verify_failed("--batch-input and --batch-output go together");
  return verify_batch(args);
}

}  // namespace

void add_verify_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a saved answer, or a batch's output, against the answering device's signature");
  cmd->add_option("--request", args->request, "The request body as sent (JSON)");
  cmd->add_option("--response", args->response, "The answer: its body, or as saved by curl -i");
  cmd->add_option("--signature", args->signature, "A JSON answer's X-Cellserve-Signature header value");
  cmd->add_option("--batch-input", args->batch_input, "A batch's input file (JSONL), for --batch-output");
  cmd->add_option("--batch-output", args->batch_output, "A batch's output file (JSONL): each line is checked");
  cmd->add_option("--custom-id", args->custom_id, "Check only the batch output line with this custom_id");
  cmd->add_option("--hub", args->hub,
                  "Check that the signing device served the deployment and model at the signed time, at this hub "
                  "($CELLSERVE_HUB_KEY)");
  cmd->add_flag("--allow-unknown-key", args->allow_unknown_key,
                "Without --hub: accept a valid signature by any key (proves only that the answer was not altered "
                "since that key signed it)");
  cmd->add_option("--max-clock-skew", args->max_clock_skew_s,
                  "Seconds the device's clock may differ from the hub's (default 60)");
  cmd->callback([args, exit_code] { *exit_code = run_verify(*args); });
}

}  // namespace cellserve::cli
