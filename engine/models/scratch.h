// Float buffers for the forward pass, kept by the calling thread from one call to the next.
//
// Why: a prefill chunk's activations are tens of MB (512 tokens of qwen3-0.6b: ~25 MB per layer).
// Fresh std::vectors in every layer cost a memset and, as glibc hands large blocks back to the
// kernel, a page fault per 4 KiB each time: a fifth of pp512's time before this existed.
//
// Buffers are taken in stack order: a ScratchFrame gives back, when it ends, what was taken in
// its scope, so the next layer (or the next call) gets the same memory. Contents are
// uninitialised: whoever takes a buffer writes it before reading it. A buffer keeps its largest
// size, so a thread holds as much as its largest forward pass needed.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace cellserve::engine {

class ScratchFrame {
 public:
  ScratchFrame();
  ~ScratchFrame();
  ScratchFrame(const ScratchFrame&) = delete;
  ScratchFrame& operator=(const ScratchFrame&) = delete;

  // n floats, not initialised, valid until this frame ends.
  std::span<float> take(size_t n);

 private:
  struct Stack;
  static Stack& this_threads_stack();
  Stack& stack_;
  size_t base_;  // buffers below this belong to enclosing frames
  int level_;    // 1 for the outermost live frame of this thread
};

}  // namespace cellserve::engine
