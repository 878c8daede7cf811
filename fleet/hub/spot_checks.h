// Spot checks and canaries: the hub's cross-checks of devices' answers (issue 45 item 2,
// docs/fleet.md "Spot checks and canaries"). For a deployment's verify_fraction of the eligible
// requests at its endpoint (greedy or seeded chat and completions, spot_check_answer.h), once
// the user's answer is complete the hub sends the same request to a second device and compares
// the answers (verify_agreement: the whole text or the first line). A disagreement goes to a
// third device; the one that disagrees with the majority loses. Canaries (canary_book.h) are
// sent to each device after every `every` requests it answered. Outcomes go to the
// AgreementBook, which quarantines a device that disagrees too often.
//
// A check never delays the user: it runs after the answer, on one of kWorkers threads, from a
// queue of at most kMaxQueued (beyond it the check is skipped); it waits for a free replica in the
// deployment's line under its own key (one client among the users) for at most kCheckWait, and is
// billed to no API key.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/object.hpp>

#include "fleet/hub/answer_capture.h"
#include "fleet/hub/canary_book.h"
#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"

namespace cellserve::fleet {

struct GatewayRequest;  // gateway_request.h

class SpotChecks {
 public:
  static constexpr int kWorkers = 2;
  static constexpr size_t kMaxQueued = 32;
  static constexpr std::chrono::seconds kCheckWait{30};
  // The waiting-line key the checks and canaries wait under.
  static constexpr const char* kLineKey = "spot-check";

  SpotChecks(HubState& state, ReplicaForwarder& forwarder) : state_(state), forwarder_(forwarder) {}
  ~SpotChecks() { stop(); }
  SpotChecks(const SpotChecks&) = delete;
  SpotChecks& operator=(const SpotChecks&) = delete;

  void start();
  // Ends the queued checks and joins the workers (a check in flight ends with its tunnel).
  void stop();

  // Whether the answer to this request at `d`'s endpoint is to be kept for a check: an eligible
  // request, drawn with the deployment's verify_fraction.
  bool draws(const DeploymentView& d, std::string_view rest, const Result<boost::json::object>& body);
  // After the user's answer ended (never blocks): counts it towards its device's next canary,
  // and queues a check of `answer` when it holds a whole 200 answer. `replica`: the index that
  // answered (-1: none). `req`: the request as the replica got it, less the hub's changes.
  void after_answer(const DeploymentView& d, const net::HttpRequest& req, std::string_view rest, int replica,
                    const AnswerCapture& answer);

 private:
  // One device's answer to a check or canary request.
  struct Answer {
    std::string device;
    std::optional<std::string> text;  // nullopt: it failed or the answer did not read
  };
  struct Job {
    DeploymentView deployment;
    net::HttpRequest request;           // path: after /v1
    std::string device;                 // the first device (a check), or the one a canary is for
    std::string first_text;             // a check: the first device's answer, compared part
    std::optional<std::string> expect;  // a canary's expected answer, compared part
  };

  bool enqueue(Job job);
  void work();
  void run_check(const Job& job);
  void run_canary(const Job& job);
  // Sends `job.request` (read once by the caller into `g`) to a device outside `excluded` (with
  // `only`, to that device alone).
  std::optional<Answer> ask(const Job& job, const GatewayRequest& g, const std::set<std::string>& excluded,
                            const std::string& only = "");
  void note(const DeploymentView& d, const std::string& device, CheckOutcome outcome, const std::string& what);
  // One check ended: "agreed", "disagreed", "skipped", "canary_passed" or "canary_failed".
  void count(const std::string& deployment, const char* result);

  HubState& state_;
  ReplicaForwarder& forwarder_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;                         // guarded by mu_
  std::mt19937_64 rng_{std::random_device{}()};  // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace cellserve::fleet
