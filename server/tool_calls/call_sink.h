// CallSink: what the readers of one call's markup hand to CallScanner: the name and id read so far,
// whether the call is now certain (committed: its CallStart may go out), and the compact arguments
// text produced by the current byte.
#pragma once

#include <string>

#include "server/tool_calls/tool_catalog.h"

namespace cellserve::server::tool_calls::detail {

struct CallSink {
  const ToolCatalog* catalog = nullptr;
  std::string name;
  std::string id;  // as the model wrote it; empty when it wrote none
  bool committed = false;
  bool object_closed = false;  // JsonCallHead read the call object's '}' (no "arguments": {} is used)
  std::string arguments;       // drained by the scanner after every byte

  void start_call() {
    name.clear();
    id.clear();
    committed = false;
    object_closed = false;
  }
};

}  // namespace cellserve::server::tool_calls::detail
