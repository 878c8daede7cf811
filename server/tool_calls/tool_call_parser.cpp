#include "server/tool_calls/tool_call_parser.h"

#include <optional>

#include "server/tool_calls/call_scanner.h"

namespace cellserve::server::tool_calls {
namespace {

using detail::ScanEvent;

// Runs the scanner over the whole text. A call's events wait until the call completes; a call that
// aborts is replaced by its own markup, as content.
ParsedMessage parse_with(ToolCallFormat format, std::string_view text, ToolCatalog catalog) {
  detail::CallScanner scanner(format, std::move(catalog));
  std::vector<ScanEvent> events;
  scanner.feed(text, events);
  scanner.finish(events);

  ParsedMessage message;
  std::optional<ToolCall> open;
  for (ScanEvent& event : events) {
    switch (event.kind) {
      case ScanEvent::Kind::Content:
        message.content += event.text;
        break;
      case ScanEvent::Kind::CallStart:
        open = ToolCall{.id = std::move(event.id), .name = std::move(event.text)};
        break;
      case ScanEvent::Kind::Arguments:
        open->arguments += event.text;
        break;
      case ScanEvent::Kind::CallEnd:
        message.tool_calls.push_back(std::move(*open));
        open.reset();
        break;
      case ScanEvent::Kind::CallAbort:
        message.content += text.substr(event.begin, event.end - event.begin);
        open.reset();
        break;
    }
  }
  return message;
}

}  // namespace

ParsedMessage parse_tool_calls(ToolCallFormat format, std::string_view generated_text,
                               const std::vector<std::string>& tool_names) {
  return parse_with(format, generated_text, ToolCatalog(tool_names));
}

ParsedMessage parse_tool_calls(ToolCallFormat format, std::string_view generated_text,
                               const std::vector<ToolSpec>& tools) {
  return parse_with(format, generated_text, ToolCatalog(tools));
}

}  // namespace cellserve::server::tool_calls
