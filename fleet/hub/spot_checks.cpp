#include "fleet/hub/spot_checks.h"

#include <boost/json.hpp>

#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway_request.h"

namespace cellserve::fleet {
namespace {

const char* outcome_name(CheckOutcome o) {
  switch (o) {
    case CheckOutcome::Agreed:
      return "agreed";
    case CheckOutcome::Lost:
      return "lost";
    case CheckOutcome::Unresolved:
      return "unresolved";
  }
  return "?";
}

}  // namespace

void SpotChecks::start() {
  for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { work(); });
}

void SpotChecks::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

bool SpotChecks::draws(const DeploymentView& d, std::string_view rest, const Result<boost::json::object>& body) {
  const double fraction = d.gateway.verify_fraction;
  if (fraction <= 0 || !body.ok() || !spot_checked_endpoint(rest) || !spot_checkable(*body)) return false;
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0, 1)(rng_) < fraction;
}

void SpotChecks::after_answer(const DeploymentView& d, const net::HttpRequest& req, std::string_view rest, int replica,
                              const AnswerCapture& answer) {
  if (replica < 0 || answer.status() != 200) return;
  if (!answer.kept() && state_.canaries.summary(d.name).first == 0) return;  // nothing to do for it
  // The device that answered: the index's device now (the index changes hands only when its
  // device leaves the replica, seconds apart from an answer).
  const ReplicaRegistry::Lookup found = state_.registry.find(d.name, replica);
  if (found.kind != ReplicaRegistry::Lookup::Kind::Found || found.replica.processor_id.empty()) return;
  const std::string& device = found.replica.processor_id;
  Job base{d, req, device, "", std::nullopt};
  base.request.headers.erase("x-request-timeout");
  if (std::optional<Canary> canary = state_.canaries.count_request(d.name, device)) {
    Job job = base;
    job.request.path = canary->path;
    job.request.body = canary->body;
    job.expect = compared_part(canary->expect, d.gateway.verify_agreement);
    if (!enqueue(std::move(job))) count(d.name, "skipped");
  }
  if (!answer.kept()) return;
  const std::optional<std::string> text = answer_text(answer.body());
  if (!text) return;
  Job job = std::move(base);
  job.request.path = std::string(rest);
  job.request.body = with_model(req.body, d.name);  // the replicas know the deployment by its name
  job.first_text = compared_part(*text, d.gateway.verify_agreement);
  if (!enqueue(std::move(job))) count(d.name, "skipped");
}

bool SpotChecks::enqueue(Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || jobs_.size() >= kMaxQueued) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void SpotChecks::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (job.expect) {
      run_canary(job);
    } else {
      run_check(job);
    }
  }
}

void SpotChecks::run_check(const Job& job) {
  const Result<GatewayRequest> g = read_gateway_request(job.request.body, job.request.path);
  if (!g.ok()) return count(job.deployment.name, "skipped");
  const std::optional<Answer> second = ask(job, *g, {job.device});
  if (!second || !second->text)
    return count(job.deployment.name, "skipped");  // no other device answered: nothing to compare
  std::optional<Answer> third;
  if (*second->text != job.first_text) third = ask(job, *g, {job.device, second->device});
  const bool third_answered = third && third->text;
  const CheckVerdict v =
      decide(job.first_text, *second->text, third_answered ? third->text : std::optional<std::string>());
  count(job.deployment.name, v.needs_third ? "disagreed" : "agreed");
  const std::string what = "spot check of a '" + job.deployment.name + "' answer";
  note(job.deployment, job.device, v.first, what + " (first answer)");
  note(job.deployment, second->device, v.second, what + " (second answer)");
  if (third_answered && v.third) note(job.deployment, third->device, *v.third, what + " (tie-break)");
}

void SpotChecks::run_canary(const Job& job) {
  const Result<GatewayRequest> g = read_gateway_request(job.request.body, job.request.path);
  if (!g.ok()) return count(job.deployment.name, "skipped");
  const std::optional<Answer> a = ask(job, *g, {}, job.device);
  if (!a || !a->text) return count(job.deployment.name, "skipped");  // a failed request is the ejection rule's business
  const bool right = compared_part(*a->text, job.deployment.gateway.verify_agreement) == *job.expect;
  count(job.deployment.name, right ? "canary_passed" : "canary_failed");
  note(job.deployment, job.device, right ? CheckOutcome::Agreed : CheckOutcome::Lost,
       "canary of '" + job.deployment.name + "'");
}

std::optional<SpotChecks::Answer> SpotChecks::ask(const Job& job, const GatewayRequest& g,
                                                  const std::set<std::string>& excluded, const std::string& only) {
  const DeploymentView& d = job.deployment;
  std::set<std::string> out = excluded;
  if (!only.empty()) {
    for (const ReplicaView& r : forwarder_.routable(d.name, {})) {
      if (r.processor_id != only) out.insert(r.processor_id);
    }
  }
  if (forwarder_.routable(d.name, out).empty()) return std::nullopt;
  Reservation r;
  const auto outcome = forwarder_.line(d.name).wait(
      kLineKey, static_cast<size_t>(std::max(d.gateway.queue_max, 1)), state_.clock.now() + kCheckWait,
      [&] { return stopping_.load(); }, [&] { return forwarder_.reserve(d.name, g.work, out, r); });
  if (outcome != WaitingLine::Outcome::Granted) return std::nullopt;
  Answer a;
  a.device = r.processor_id;
  AnswerCapture capture(&stopping_);
  const Attempt sent = forwarder_.send(r, d, job.request, "/v1" + job.request.path, capture,
                                       first_byte_limit(d.gateway, g.work, g.stream));
  forwarder_.release(r, d.name);
  if (sent.status.ok() && !sent.expired && capture.kept() && capture.status() == 200) {
    if (std::optional<std::string> text = answer_text(capture.body())) {
      a.text = compared_part(*text, d.gateway.verify_agreement);
    }
  }
  return a;
}

void SpotChecks::note(const DeploymentView& d, const std::string& device, CheckOutcome outcome,
                      const std::string& what) {
  const AgreementBook::Recorded r = state_.agreement.record(device, outcome, state_.now_ms());
  state_.saved(state_.store->save_agreement(r.record), "agreement of device " + device.substr(0, 16));
  if (outcome == CheckOutcome::Lost) {
    state_.log("device " + device.substr(0, 16) + " " + outcome_name(outcome) + " a " + what);
  }
  if (r.quarantined_now) {
    state_.log("device " + device.substr(0, 16) + " quarantined (deployment " + d.name + "): " + r.record.reason +
               "; it gets no traffic until `cellserve fleet release " + device.substr(0, 16) + "`");
  }
}

void SpotChecks::count(const std::string& deployment, const char* result) {
  state_.metrics.count_spot_check(deployment, result);
}

}  // namespace cellserve::fleet
