// How a request names one replica of a deployment, defined once for the hub and the agent:
// the path "/d/<deployment>/r/<index>/<rest>" or the host label "<deployment>-<index>"; and the
// deployment as a whole: "/d/<deployment>/v1/<rest>" or the host label "<deployment>".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "net/route_table.h"

namespace cellserve::fleet {

// The route pattern of a replica's API; the captures are read by replica_address().
inline constexpr std::string_view kReplicaRoute = "/d/{deployment}/r/{index}/{rest...}";
// The deployment's own endpoint at the hub (any of its replicas); "rest" follows "/v1".
inline constexpr std::string_view kDeploymentRoute = "/d/{deployment}/v1/{rest...}";

struct ReplicaAddress {
  std::string deployment;
  int index = 0;
  std::string rest;  // the path after the address, "/" when none (e.g. "/v1/models")
};

// A deployment name: 1..40 of [a-z0-9-], not starting or ending with '-'.
bool valid_deployment_name(std::string_view name);

// The address captured by kReplicaRoute; nullopt when the name or the index (1..4 digits) is
// not valid.
std::optional<ReplicaAddress> replica_address(const net::PathParams& params);

// The path that reaches replica `index` of `deployment` at the hub or its agent:
// "/d/<deployment>/r/<index><rest>" (`rest` begins with '/', e.g. "/v1/chat/completions"). The one
// place a replica path is built; kReplicaRoute and replica_address() read it back.
std::string replica_path(std::string_view deployment, int index, std::string_view rest);

// The address of a path replica_path() built ("/d/<deployment>/r/<index><rest>", a query
// allowed after it); nullopt for any other path.
std::optional<ReplicaAddress> replica_address_from_path(std::string_view path);

// "<deployment>-<index>", a host name's first label; nullopt when it is not one. `rest` is "".
std::optional<ReplicaAddress> replica_address_from_host_label(std::string_view label);

}  // namespace cellserve::fleet
