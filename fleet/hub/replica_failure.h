// Which answers of a replica say that the replica failed, not the request. One rule for the
// deployment endpoint's failover and hedges (gateway.cpp, hedge.cpp), the batch runner's retries
// (batch_runner.cpp) and the replica's ejection (ReplicaRegistry::record_result).
#pragma once

namespace cellserve::fleet {

// A 429 (the replica has no room now) and every 5xx but 501 (a route the deployment's engine does
// not serve answers 501 on each of its replicas alike). Such an answer goes to another replica
// when one can take the request, loses a hedge race, and counts towards the replica's ejection.
// Every other status (2xx, and the request's own 4xx) is the request's answer.
constexpr bool is_replica_failure(int status) {
  return status == 429 || (status >= 500 && status <= 599 && status != 501);
}

}  // namespace cellserve::fleet
