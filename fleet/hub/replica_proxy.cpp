// Forwarding a user's request to the processor serving replica <index> of a deployment, through
// that processor's tunnel. Reads only the registry, never the store.
#include <boost/json.hpp>

#include "fleet/hub/hub_impl.h"

namespace cellserve::fleet {
namespace {

// Passes everything through to the user's writer, noting whether a stream began and whether it
// is Server-Sent Events, so that a stream the device broke can be ended honestly.
class ObservingWriter final : public net::ResponseWriter {
 public:
  explicit ObservingWriter(net::ResponseWriter& out) : out_(out) {}
  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override {
    out_.send(status, type, std::move(body), headers);
  }
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override {
    streaming_ = true;
    event_stream_ = type.starts_with("text/event-stream");
    return out_.begin_stream(status, type, headers);
  }
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  bool client_gone() override { return out_.client_gone(); }
  void abort_stream() override { out_.abort_stream(); }

  bool streaming() const { return streaming_; }
  bool event_stream() const { return event_stream_; }

 private:
  net::ResponseWriter& out_;
  bool streaming_ = false;
  bool event_stream_ = false;
};

// The last events of an SSE stream that broke after its first byte: an OpenAI-style error
// naming the cause, then [DONE], so a client never mistakes a truncated answer for a whole one.
std::string broken_stream_events(const std::string& cause) {
  const net::ApiError e =
      net::api_error(502, "the device serving this request failed mid-answer: " + cause + "; the answer is incomplete");
  return "data: " + net::error_body(e) + "\n\ndata: [DONE]\n\n";
}

}  // namespace

void Hub::Impl::proxy_replica(const net::HttpRequest& req, net::ResponseWriter& w, const ReplicaAddress& address) {
  const std::string& deployment = address.deployment;
  const int index = address.index;
  const ReplicaRegistry::Lookup found = registry.find(deployment, index);
  if (found.kind == ReplicaRegistry::Lookup::Kind::NoDeployment) {
    return send_error(w, 404, "no deployment named '" + deployment + "'");
  }
  if (found.kind == ReplicaRegistry::Lookup::Kind::NoSuchReplica) {
    return send_error(w, 404, "deployment '" + deployment + "' has replicas 0.." + std::to_string(found.replicas - 1));
  }
  const ReplicaView& row = found.replica;
  const net::HeaderList retry = {{"Retry-After", "5"}};
  if (row.state != ReplicaState::Ready) {
    std::string state = replica_state_name(row.state);
    if (row.state == ReplicaState::Downloading)
      state += " " + std::to_string(static_cast<int>(row.progress * 100)) + "%";
    return send_error(
        w, 503, "replica " + std::to_string(index) + " of '" + deployment + "' is not ready (" + state + ")", retry);
  }
  const std::shared_ptr<AgentLink> link = links.find(row.processor_id);
  if (!link) return send_error(w, 503, "replica " + std::to_string(index) + "'s device is offline", retry);
  const ReplicaRegistry::InFlight in_flight = registry.begin_request(deployment, index);
  bool responded = false;
  ObservingWriter observed(w);
  const Status s = link->tunnel->forward(req, observed, &responded);
  if (s.ok()) return;
  if (!responded) return send_error(w, 502, "replica unreachable: " + s.message(), retry);
  if (!observed.streaming() || w.client_gone()) return;
  if (observed.event_stream()) {
    w.write(broken_stream_events(s.message()));
    w.end_stream();
  } else {
    w.abort_stream();  // no clean end for a body we know is truncated
  }
}

}  // namespace cellserve::fleet
