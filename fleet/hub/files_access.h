// What a device's download token opens on a closed hub: /files/<path> only while the device is
// enrolled and one of the replicas (or spares) assigned to it now names that file as its model or
// one of its adapters. A token alone proves only who the device is (files_token.h); this decides,
// per request, from the store, so a revoked or unassigned device is refused at once.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "fleet/store/store.h"

namespace cellserve::fleet {

// OK when `processor_id` may fetch `request_path` ("/files/a/b.gguf", as requested): the path of
// one of its assigned URLs, percent-decoded, is it or ends with it (a reverse proxy's prefix).
// PermissionDenied, in one line that names the reason (not enrolled, or no assignment names the
// file), otherwise; Internal when the store fails.
Status device_may_fetch(Store& store, const std::string& processor_id, std::string_view request_path);

// The path of an http(s) URL, percent-decoded, without query or fragment ("/files/a.gguf");
// "" for another scheme (hf://), a URL without a path, or a bad or NUL escape.
std::string decoded_url_path(std::string_view url);

}  // namespace cellserve::fleet
