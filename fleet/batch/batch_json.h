// The OpenAI API's JSON for files, batches and batch result lines, exactly as OpenAI defines
// them (timestamps in Unix seconds, null for what has not happened).
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "fleet/batch/batch_records.h"

namespace cellserve::fleet {

boost::json::object file_json(const BatchFile& f);
boost::json::object batch_json(const Batch& b);

// {"object": "list", "data": [...], "first_id", "last_id", "has_more"}.
boost::json::object list_json(boost::json::array data, bool has_more);

// What an output line's response.body holds for a device's answer `body`: its JSON when it
// parses, else the text as a string.
boost::json::value batch_body_value(std::string_view body);

// An output (2xx) or error (other status) file line for a request that got an answer: the
// response's status and body (batch_body_value). `signature`: the answering device's
// X-Cellserve-Signature record ("" : none), kept as response.cellserve_signature so the line
// stays verifiable (`cellserve verify --batch-output`); when the body's compact JSON is not byte
// for byte what the device sent (what the record's response_sha256 covers), those bytes are kept
// too, as the string response.cellserve_body.
std::string batch_result_line(const std::string& custom_id, int status_code, const std::string& body,
                              std::string_view signature = {});

}  // namespace cellserve::fleet
