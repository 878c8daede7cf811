#include "engine/models/scratch.h"

#include "base/check.h"

namespace cellserve::engine {

struct ScratchFrame::Stack {
  struct Buffer {
    std::unique_ptr<float[]> data;  // never moves, so pointers survive `buffers` growing
    size_t size = 0;
  };
  std::vector<Buffer> buffers;
  size_t used = 0;
  int live_frames = 0;
};

ScratchFrame::Stack& ScratchFrame::this_threads_stack() {
  thread_local Stack stack;
  return stack;
}

ScratchFrame::ScratchFrame() : stack_(this_threads_stack()), base_(stack_.used), level_(++stack_.live_frames) {}

ScratchFrame::~ScratchFrame() {
  CS_CHECK(level_ == stack_.live_frames) << "scratch frames ended out of order";
  --stack_.live_frames;
  stack_.used = base_;
}

std::span<float> ScratchFrame::take(size_t n) {
  // Taking from an enclosing frame while an inner one lives would let the inner one give it back.
  CS_CHECK(level_ == stack_.live_frames) << "scratch taken from a frame that is not the innermost";
  if (stack_.used == stack_.buffers.size()) stack_.buffers.emplace_back();
  Stack::Buffer& b = stack_.buffers[stack_.used++];
  if (b.size < n) {
    b.data.reset();  // the old block first, so the peak is not both
    b.data.reset(new float[n]);
    b.size = n;
  }
  return {b.data.get(), n};
}

}  // namespace cellserve::engine
