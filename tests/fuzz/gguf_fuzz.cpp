// libFuzzer target: any byte string given to the GGUF parser yields a file or an error, and a
// parsed file's metadata and tensor views can be read entirely without leaving the input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellserve::engine;
  auto file = GgufFile::parse(std::as_bytes(std::span(data, size)));
  if (!file.ok()) return 0;
  volatile size_t sink = 0;
  for (const auto& kv : file->metadata()) sink = sink + kv.value.to_display_string(4).size();
  const GgufSummary summary = summarize(*file);
  sink = sink + summary.parameter_count;
  for (const auto& info : file->tensors()) {
    const TensorView view = file->view(info);
    uint8_t x = 0;
    for (std::byte b : view.data) x ^= static_cast<uint8_t>(b);  // touches every byte
    sink = sink + x;
  }
  return 0;
}
