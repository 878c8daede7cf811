#include "server/tool_calls/tool_call_stream.h"

#include "server/tool_calls/call_scanner.h"

namespace cellserve::server::tool_calls {

using detail::ScanEvent;

ToolCallStream::ToolCallStream(ToolCallFormat format, std::vector<std::string> tool_names)
    : scanner_(std::make_unique<detail::CallScanner>(format, ToolCatalog(tool_names))) {}

ToolCallStream::ToolCallStream(ToolCallFormat format, const std::vector<ToolSpec>& tools)
    : scanner_(std::make_unique<detail::CallScanner>(format, ToolCatalog(tools))) {}

ToolCallStream::~ToolCallStream() = default;
ToolCallStream::ToolCallStream(ToolCallStream&&) noexcept = default;
ToolCallStream& ToolCallStream::operator=(ToolCallStream&&) noexcept = default;

std::vector<StreamEvent> ToolCallStream::feed(std::string_view text_piece) { return run(text_piece, false); }

std::vector<StreamEvent> ToolCallStream::finish() { return run({}, true); }

std::size_t ToolCallStream::buffered_bytes() const { return finished_ ? 0 : scanner_->buffered_bytes(); }

std::vector<StreamEvent> ToolCallStream::run(std::string_view text, bool at_end) {
  std::vector<StreamEvent> events;
  if (finished_) return events;
  std::vector<ScanEvent> scanned;
  scanner_->feed(text, scanned);
  if (at_end) {
    scanner_->finish(scanned);
    finished_ = true;
  }
  auto content = [&](std::string&& text) {
    if (text.empty()) return;
    if (!events.empty()) {
      if (auto* last = std::get_if<ContentDelta>(&events.back())) {
        last->text += text;
        return;
      }
    }
    events.emplace_back(ContentDelta{std::move(text)});
  };
  for (ScanEvent& event : scanned) {
    switch (event.kind) {
      case ScanEvent::Kind::Content:
        content(std::move(event.text));
        break;
      case ScanEvent::Kind::CallStart:
        events.emplace_back(CallStart{next_index_, std::move(event.id), std::move(event.text)});
        break;
      case ScanEvent::Kind::Arguments:
        events.emplace_back(ArgumentsDelta{next_index_, std::move(event.text)});
        break;
      case ScanEvent::Kind::CallEnd:
        ++next_index_;
        break;
      case ScanEvent::Kind::CallAbort:
        // Already announced: the call ends here; what it had not sent yet is content.
        ++next_index_;
        ++cut_calls_;
        content(std::move(event.text));
        break;
    }
  }
  return events;
}

}  // namespace cellserve::server::tool_calls
