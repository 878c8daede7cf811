// Autotune: at start-up, measures a few engine settings on the loaded model for a few seconds
// and keeps the fastest — the thread count (by generation speed) and the prefill chunk (the
// smallest chunk within 10% of the best prompt throughput, since a smaller chunk lets running
// streams advance more often while a long prompt is read).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "engine/models/model.h"

namespace cellserve::server {

struct AutotuneOptions {
  std::vector<int> threads;  // candidates; empty: 1, 2, 4, ... up to the CPUs, plus the default
  std::vector<int64_t> prefill_chunks = {32, 64, 128, 256, 512};
  double max_seconds = 20;  // stop trying further candidates after this long
  engine::GgmlType kv_type = engine::GgmlType::F16;
};

struct AutotuneResult {
  int threads = 1;
  int64_t prefill_chunk = 256;
  boost::json::object report;  // {"threads": [...], "prefill_chunk": [...], "chosen": {...}, "seconds"}
};

// Runs the measurements; `log` receives one line per measurement.
Result<AutotuneResult> autotune(const std::shared_ptr<const engine::Model>& model, const AutotuneOptions& options,
                                const std::function<void(const std::string&)>& log);

}  // namespace cellserve::server
