// RenderOptions: the limits and clock one render runs under.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>

namespace cellserve::engine::chat {

struct RenderOptions {
  // Rendering fails (ResourceExhausted) once the output, or any one string the template builds,
  // would exceed this. Real prompts are far smaller; the limit stops `'x' * 10**9` and friends.
  size_t max_output_bytes = 16u << 20;
  // Statements and expressions evaluated; stops templates that loop over huge ranges.
  uint64_t max_steps = 20'000'000;
  // Nesting of expression evaluation and macro calls (recursive macros); keeps the C++ stack
  // bounded: under 1 KiB per level in an optimised build (500 levels < 512 KiB), about 4 KiB
  // under ASan in a Debug build.
  int max_depth = 500;
  // The local time strftime_now() formats; nullopt: the local time at render.
  std::optional<std::tm> now;
};

}  // namespace cellserve::engine::chat
