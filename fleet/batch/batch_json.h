// The OpenAI API's JSON for files, batches and batch result lines, exactly as OpenAI defines
// them (timestamps in Unix seconds, null for what has not happened).
#pragma once

#include <string>

#include <boost/json/object.hpp>

#include "fleet/batch/batch_records.h"

namespace cellserve::fleet {

boost::json::object file_json(const BatchFile& f);
boost::json::object batch_json(const Batch& b);

// {"object": "list", "data": [...], "first_id", "last_id", "has_more"}.
boost::json::object list_json(boost::json::array data, bool has_more);

// An output (2xx) or error (other status) file line for a request that got an answer: the
// response's status and body (JSON when it parses, else the text).
std::string batch_result_line(const std::string& custom_id, int status_code, const std::string& body);

}  // namespace cellserve::fleet
