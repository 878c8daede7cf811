// CallScanner: the one reader of tool calls in generated text, fed in pieces of any size; both
// parse_tool_calls() and ToolCallStream run it. It decides on each byte alone, so its output does
// not depend on how the text was split.
//
// Text is content, released as soon as it cannot begin a start marker; whitespace right before a
// call (at most kMaxTrimmedSpace bytes) and right after one is the format's, and dropped. After a
// start marker the format's program (call_syntax.h) reads the markup, held back, until the call
// commits: its name is a known tool and its arguments begin. From then on its arguments stream;
// the call is complete when they are (a missing or garbled closing tag after that does not undo
// it: the bytes that do not match are text again). Markup that fails before the commit, or that
// would hold more than kMaxHeldBytes, is text. A call that fails after its commit (the text ends
// or the JSON breaks inside its arguments) is reported as CallAbort with its bytes in the input,
// and the scanner goes on with the failing byte as text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls/call_sink.h"
#include "server/tool_calls/call_syntax.h"
#include "server/tool_calls/json_call_object.h"
#include "server/tool_calls/json_scanner.h"
#include "server/tool_calls/literal_matcher.h"
#include "server/tool_calls/python_call_arguments.h"
#include "server/tool_calls/tool_call_format.h"
#include "server/tool_calls/tool_catalog.h"
#include "server/tool_calls/xml_parameters.h"

namespace cellserve::server::tool_calls::detail {

struct ScanEvent {
  enum class Kind { Content, CallStart, Arguments, CallEnd, CallAbort };
  Kind kind;
  std::string text{};     // Content, Arguments; CallStart: the name; CallAbort: bytes read but never sent
  std::string id{};       // CallStart
  std::size_t begin = 0;  // CallAbort: the call's markup is input bytes [begin, end)
  std::size_t end = 0;
};

class CallScanner {
 public:
  static constexpr std::size_t kMaxHeldBytes = 4096;
  static constexpr std::size_t kMaxTrimmedSpace = 256;

  CallScanner(ToolCallFormat format, ToolCatalog catalog);

  void feed(std::string_view text, std::vector<ScanEvent>& out);
  // The end of the text: what is held back is released (as text, or a call's CallAbort).
  void finish(std::vector<ScanEvent>& out);
  // Bytes read but not yet reported.
  std::size_t buffered_bytes() const;

 private:
  enum class Mode { Text, Call };
  enum class Phase { Held, Streaming };

  void text_byte(char c, std::size_t at);
  void call_byte(char c, std::size_t at);
  void start_call(int first_op, std::size_t at);
  Step step_op(char c);
  void enter(int pc);
  void run_plain_ops(std::size_t at);
  void after_step(std::size_t at);
  void succeed();
  void fail(char c, std::size_t at);
  void hold(char c, std::size_t at);
  void emit_content(std::string_view text);
  void emit_held_as_text();
  void push(ScanEvent::Kind kind, std::string_view text);
  bool is_marker_prefix(std::string_view text) const;

  const CallSyntax& syntax_;
  ToolCatalog catalog_;
  std::vector<ScanEvent>* out_ = nullptr;
  std::size_t offset_ = 0;  // input bytes fed so far

  Mode mode_ = Mode::Text;
  Phase phase_ = Phase::Held;
  std::string held_;              // text mode: whitespace + a marker prefix; call mode: unreleased markup
  std::size_t held_begin_ = 0;    // input offset of held_[0]
  std::size_t space_run_ = 0;     // text mode: held_ begins with this much whitespace
  bool after_call_ = false;       // whitespace now is the format's, after a call
  std::size_t region_begin_ = 0;  // input offset of the committed call's markup

  int pc_ = 0;
  int next_pc_ = 0;  // where a Done / DoneBefore op goes
  std::size_t literal_pos_ = 0;
  LiteralMatcher choice_;
  std::string field_;
  CallSink sink_;
  JsonCallHead head_;
  JsonCallTail tail_;
  JsonScanner arguments_;
  XmlParameters xml_;
  PythonCallArguments python_;
};

}  // namespace cellserve::server::tool_calls::detail
