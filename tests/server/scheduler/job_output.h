// Collecting a scheduler job's events in tests: its text, token ids and final event.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/scheduler/job.h"

namespace cellserve::server {

struct Output {
  std::string text;
  std::vector<int32_t> tokens;  // filled when the job asked for logprobs (token events carry ids)
  JobEvent done;
};

// Waits for every event of the job (at most 60 s between two).
inline Output collect(const std::shared_ptr<JobEvents>& events) {
  Output out;
  for (;;) {
    std::optional<JobEvent> e = events->pop(std::chrono::milliseconds(60000));
    if (!e) {
      ADD_FAILURE() << "no event within 60 s";
      return out;
    }
    if (e->kind == JobEvent::Kind::Done) {
      out.done = std::move(*e);
      return out;
    }
    out.text += e->text;
    for (const GeneratedToken& t : e->tokens) out.tokens.push_back(t.chosen.token);
  }
}

}  // namespace cellserve::server
