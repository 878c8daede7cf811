// `cellserve batch submit|ls|show|cancel|results`: the OpenAI Batch API of one deployment at the
// hub (/d/<deployment>/v1/files and /v1/batches; docs/batch.md). The key is $CELLSERVE_API_KEY
// (an API key for the deployment), else $CELLSERVE_HUB_KEY (the admin key).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct BatchArgs {
  std::string hub = default_hub_url();
  std::string deployment;
  std::string file;
  std::string id;
  std::string endpoint = "/v1/chat/completions";
  std::string output;
  bool wait = false;
  bool as_json = false;
  bool errors = false;
};

std::string data_key() {
  for (const char* name : {"CELLSERVE_API_KEY", "CELLSERVE_HUB_KEY"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  }
  return "";
}

std::string base(const BatchArgs& a) { return "/d/" + a.deployment + "/v1"; }

int batch_failed(const Status& s) {
  print_error("batch", s.message());
  return 1;
}

std::string duration_text(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  const long s = static_cast<long>(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
  }
  return buf;
}

// One progress report: done / failed / total, requests per hour, ETA.
struct Progress {
  std::string status;
  int64_t total = 0, done = 0, failed = 0;
  double per_hour = 0;
  double eta_s = -1;
};

Result<Progress> progress_of(const BatchArgs& a, const std::string& id) {
  CS_ASSIGN_OR_RETURN(json::value b, data_request(a.hub, data_key(), "GET", base(a) + "/batches/" + id));
  Progress p;
  p.status = json_string(b.as_object(), "status");
  if (const json::value* c = b.as_object().if_contains("request_counts"); c && c->is_object()) {
    p.total = static_cast<int64_t>(json_number(c->as_object().if_contains("total")));
    p.done = static_cast<int64_t>(json_number(c->as_object().if_contains("completed")));
    p.failed = static_cast<int64_t>(json_number(c->as_object().if_contains("failed")));
  }
  if (auto t = data_request(a.hub, data_key(), "GET", base(a) + "/batches/" + id + "/throughput"); t.ok()) {
    p.per_hour = json_number(t->as_object().if_contains("requests_per_hour"));
  }
  const int64_t left = p.total - p.done - p.failed;
  if (p.per_hour > 0) p.eta_s = static_cast<double>(left) / p.per_hour * 3600;
  return p;
}

void print_progress(const Progress& p, bool bar) {
  if (bar) {
    constexpr int kWidth = 30;
    const double fraction = p.total > 0 ? static_cast<double>(p.done + p.failed) / static_cast<double>(p.total) : 0;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string b(static_cast<size_t>(filled), '#');
    b.resize(kWidth, '.');
    std::fprintf(stderr, "\r[%s] %lld/%lld done, %lld failed, %.0f req/h, ETA %s  %s   ", b.c_str(),
                 static_cast<long long>(p.done), static_cast<long long>(p.total), static_cast<long long>(p.failed),
                 p.per_hour, duration_text(p.eta_s).c_str(), p.status.c_str());
  } else {
    std::printf("%s done=%lld failed=%lld total=%lld requests_per_hour=%.1f eta_s=%.0f\n", p.status.c_str(),
                static_cast<long long>(p.done), static_cast<long long>(p.failed), static_cast<long long>(p.total),
                p.per_hour, p.eta_s);
  }
  std::fflush(stdout);
  std::fflush(stderr);
}

bool terminal_status(const std::string& s) {
  return s == "completed" || s == "failed" || s == "expired" || s == "cancelled";
}

int wait_for(const BatchArgs& a, const std::string& id) {
  const bool bar = !a.as_json && ::isatty(STDERR_FILENO) != 0;
  for (;;) {
    auto p = progress_of(a, id);
    if (!p.ok()) return batch_failed(p.status());
    print_progress(*p, bar);
    if (terminal_status(p->status)) {
      if (bar) std::fputc('\n', stderr);
      return p->status == "completed" ? 0 : 1;
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

int submit(const BatchArgs& a) {
  auto file = data_upload(a.hub, data_key(), base(a) + "/files", a.file, {{"purpose", "batch"}});
  if (!file.ok()) return batch_failed(file.status());
  const std::string file_id = json_string(file->as_object(), "id");
  auto batch = data_request(a.hub, data_key(), "POST", base(a) + "/batches",
                            json::serialize(json::object{
                                {"input_file_id", file_id}, {"endpoint", a.endpoint}, {"completion_window", "24h"}}));
  if (!batch.ok()) return batch_failed(batch.status());
  const std::string id = json_string(batch->as_object(), "id");
  if (a.as_json) {
    print_json(*batch);
  } else {
    std::printf("batch %s (input %s)\n", id.c_str(), file_id.c_str());
  }
  return a.wait ? wait_for(a, id) : 0;
}

int show(const BatchArgs& a) {
  auto b = data_request(a.hub, data_key(), "GET", base(a) + "/batches/" + a.id);
  if (!b.ok()) return batch_failed(b.status());
  auto t = data_request(a.hub, data_key(), "GET", base(a) + "/batches/" + a.id + "/throughput");
  if (a.as_json) {
    json::object o = b->as_object();
    if (t.ok()) o["throughput"] = *t;
    print_json(o);
    return 0;
  }
  const json::object& o = b->as_object();
  const json::object* c = o.if_contains("request_counts") ? o.at("request_counts").if_object() : nullptr;
  std::printf("%s  %s  %s  completed %lld  failed %lld  total %lld\n", a.id.c_str(), json_string(o, "status").c_str(),
              json_string(o, "endpoint").c_str(),
              static_cast<long long>(c ? json_number(c->if_contains("completed")) : 0),
              static_cast<long long>(c ? json_number(c->if_contains("failed")) : 0),
              static_cast<long long>(c ? json_number(c->if_contains("total")) : 0));
  for (const char* key : {"output_file_id", "error_file_id"}) {
    if (const std::string f = json_string(o, key); !f.empty()) std::printf("  %s %s\n", key, f.c_str());
  }
  if (const json::value* e = o.if_contains("errors"); e && e->is_object()) {
    for (const json::value& err : e->as_object().at("data").as_array()) {
      std::printf("  error line %lld: %s\n", static_cast<long long>(json_number(err.as_object().if_contains("line"))),
                  json_string(err.as_object(), "message").c_str());
    }
  }
  if (t.ok()) {
    std::printf("  %.1f requests per hour over %s\n", json_number(t->as_object().if_contains("requests_per_hour")),
                duration_text(json_number(t->as_object().if_contains("elapsed_seconds"))).c_str());
    for (const json::value& d : t->as_object().at("devices").as_array()) {
      std::printf("  device %s: %lld answered, %.1f per hour\n",
                  json_string(d.as_object(), "device").substr(0, 16).c_str(),
                  static_cast<long long>(json_number(d.as_object().if_contains("answered"))),
                  json_number(d.as_object().if_contains("requests_per_hour")));
    }
  }
  return 0;
}

int results(const BatchArgs& a) {
  auto b = data_request(a.hub, data_key(), "GET", base(a) + "/batches/" + a.id);
  if (!b.ok()) return batch_failed(b.status());
  const std::string file_id = json_string(b->as_object(), a.errors ? "error_file_id" : "output_file_id");
  if (file_id.empty()) {
    return batch_failed(Status::not_found("batch " + a.id + " has no " + (a.errors ? "error" : "output") +
                                          " file (status " + json_string(b->as_object(), "status") + ")"));
  }
  std::FILE* out = a.output.empty() ? stdout : std::fopen(a.output.c_str(), "wb");
  if (out == nullptr) return batch_failed(Status::internal(a.output + ": cannot be written"));
  const Status s = data_download(a.hub, data_key(), base(a) + "/files/" + file_id + "/content", out);
  if (out != stdout) std::fclose(out);
  if (!s.ok()) return batch_failed(s);
  return 0;
}

}  // namespace

void add_batch_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<BatchArgs>();
  CLI::App* batch = app.add_subcommand("batch", "Batch work over a deployment (the OpenAI Batch API at the hub)");
  batch->require_subcommand(1);
  const auto common = [&](CLI::App* c) {
    c->add_option("--hub", a->hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
    c->add_option("--deployment,-d", a->deployment, "The deployment")->required();
    c->add_flag("--json", a->as_json, "JSON, and plain progress lines, instead of text and a progress bar");
  };
  CLI::App* submit_cmd = batch->add_subcommand("submit", "Upload a JSONL file of requests and start a batch");
  submit_cmd->add_option("file", a->file, "The requests, one JSON object per line")->required();
  submit_cmd->add_option("--endpoint", a->endpoint, "/v1/chat/completions or /v1/completions")->capture_default_str();
  submit_cmd->add_flag("--wait", a->wait, "Follow progress until the batch ends");
  common(submit_cmd);
  submit_cmd->callback([a, exit_code] { *exit_code = submit(*a); });
  CLI::App* ls = batch->add_subcommand("ls", "List the deployment's batches");
  common(ls);
  ls->callback([a, exit_code] {
    auto r = data_request(a->hub, data_key(), "GET", base(*a) + "/batches?limit=100");
    if (!r.ok()) {
      *exit_code = batch_failed(r.status());
      return;
    }
    if (a->as_json) return print_json(*r);
    for (const json::value& b : r->as_object().at("data").as_array()) {
      const json::object& o = b.as_object();
      const json::object& c = o.at("request_counts").as_object();
      std::printf("%-32s %-12s %lld/%lld done, %lld failed\n", json_string(o, "id").c_str(),
                  json_string(o, "status").c_str(), static_cast<long long>(json_number(c.if_contains("completed"))),
                  static_cast<long long>(json_number(c.if_contains("total"))),
                  static_cast<long long>(json_number(c.if_contains("failed"))));
    }
  });
  for (const char* name : {"show", "cancel", "results"}) {
    CLI::App* c =
        batch->add_subcommand(name, std::string(name) == "show"     ? "A batch's status, counts and throughput"
                                    : std::string(name) == "cancel" ? "Stop leasing a batch's requests"
                                                                    : "Download a batch's output (or errors)");
    c->add_option("id", a->id, "Batch id")->required();
    common(c);
    if (std::string(name) == "results") {
      c->add_option("-o,--output", a->output, "Write to this file instead of stdout");
      c->add_flag("--errors", a->errors, "The error file instead of the output file");
      c->callback([a, exit_code] { *exit_code = results(*a); });
    } else if (std::string(name) == "show") {
      c->callback([a, exit_code] { *exit_code = show(*a); });
    } else {
      c->callback([a, exit_code] {
        auto r = data_request(a->hub, data_key(), "POST", base(*a) + "/batches/" + a->id + "/cancel");
        if (!r.ok()) {
          *exit_code = batch_failed(r.status());
          return;
        }
        std::printf("%s: %s\n", a->id.c_str(), json_string(r->as_object(), "status").c_str());
      });
    }
  }
}

}  // namespace cellserve::cli
