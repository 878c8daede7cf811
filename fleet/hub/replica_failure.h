// Which answers of a replica say that the replica failed, not the request. One rule for the
// deployment endpoint's failover and hedges (gateway.cpp, hedge.cpp), the batch runner's retries
// (batch_runner.cpp) and the replica's ejection (ReplicaRegistry::record_result).
#pragma once

namespace cellserve::fleet {

// A 429 (the replica has no room now) and every 5xx but 501 and 504: a route the deployment's
// engine does not serve answers 501 on each of its replicas alike, and a 504 is a deadline (the
// client's own, passed on as X-Request-Timeout, or the request's time limit). Such an answer goes
// to another replica when one can take the request and loses a hedge race; it counts towards the
// replica's ejection once another replica has answered the same request (a request every replica
// refuses says nothing of any of them). Every other status (2xx, and the request's own 4xx) is the
// request's answer.
constexpr bool is_replica_failure(int status) {
  return status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 504);
}

}  // namespace cellserve::fleet
