// Canaries: a deployment's known requests with expected answers (`cellserve deployments canaries
// D FILE.jsonl`), which the hub mixes into each device's traffic, one after every `every`
// requests the device answered at the deployment endpoint. A canary goes to the device like a
// user's request (same path, replica key and headers) and is billed to no one; a wrong answer
// counts against the device like a lost tie-break (agreement_book.h). Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

// Bounds on what an operator uploads: the hub keeps the cases in memory and in hub.db.
inline constexpr size_t kMaxCanaries = 100;
inline constexpr size_t kMaxCanaryLineBytes = 16 * 1024;
inline constexpr size_t kMaxCanaryExpectBytes = 4 * 1024;
inline constexpr int kMaxCanaryEvery = 100000;

struct Canary {
  std::string path;  // after /v1: "/chat/completions" (a body with messages) or "/completions"
  std::string body;  // the request body as sent
  std::string expect;
};

// Reads a canaries file: one JSON object a line, {"request": {...}, "expect": "..."}; blank
// lines are skipped. Each request is greedy (temperature 0) or seeded, not streamed, and has
// `messages` (chat) or `prompt` (completions). InvalidArgument naming the line otherwise.
Result<std::vector<Canary>> parse_canaries(std::string_view jsonl);

class CanaryBook {
 public:
  // Loads stored sets; a set that no longer parses is skipped (and named in the returned text).
  std::string load(const std::vector<CanarySet>& sets);
  // Validates and replaces `set.deployment`'s canaries (empty cases: removes them).
  Status set(const CanarySet& set);
  void remove(const std::string& deployment);
  // How many canaries `deployment` has and their rate (0 cases: none).
  std::pair<size_t, int> summary(const std::string& deployment) const;

  // Counts one answered request of `device` at `deployment`'s endpoint; the canary to send it
  // now, when its turn came.
  std::optional<Canary> count_request(const std::string& deployment, const std::string& device);

 private:
  struct Set {
    std::vector<Canary> cases;
    int every = 50;
    struct Turn {
      int count = 0;    // requests since the device's last canary
      size_t next = 0;  // the case it gets next (each device goes round all of them)
    };
    std::map<std::string, Turn> devices;
  };
  mutable std::mutex mu_;
  std::map<std::string, Set> sets_;  // by deployment; guarded by mu_
};

}  // namespace cellserve::fleet
