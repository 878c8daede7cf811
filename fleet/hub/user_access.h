// Who may use a deployment's data path: the admin key, or an API key of that deployment within
// its quotas; anyone while the hub is open (HubState::open_data_path).
#pragma once

#include <string>

#include "fleet/hub/hub_state.h"

namespace cellserve::fleet {

// Whether a user's request to `deployment` may go on; false after answering 401, 403 or 429 in
// OpenAI's shape, or 503 when the store cannot count the key's quota now. Each call counts one request against the
// key's rate. *key_id: the API key used ("" : the admin key, or an open hub).
bool user_allowed(HubState& state, const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                  std::string* key_id);

}  // namespace cellserve::fleet
