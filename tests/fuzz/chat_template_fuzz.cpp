// libFuzzer target: the Jinja renderer running a fixed chatml template over fuzzed messages.
// Input: a JSON document, either the messages array itself or an object with "messages" and
// optionally "tools", "add_generation_prompt" and any other keys, which become template variables
// as chat_template_kwargs do. The template is parsed once; every input renders it. Rendering
// errors (a message without "role", content of the wrong type...) are expected results; the
// target looks for crashes, leaks, UB and runaway renders.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <boost/json/parse.hpp>

#include "engine/chat/chat_template.h"

namespace {

// A chatml template in the style of Qwen2.5's: a system turn that lists the tools, tool calls
// printed with tojson (arguments that are strings printed verbatim), tool results grouped into
// one user turn, and a generation prompt. It uses loops with loop variables, namespace(),
// slicing, filters, tests and string methods, so fuzzed messages reach most of the interpreter.
constexpr std::string_view kTemplate = R"JINJA({%- set ns = namespace(system_done=false, last_user=-1) -%}
{%- for m in messages -%}
  {%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{%- if tools is defined and tools -%}
<|im_start|>system
{% if messages and messages[0].role == 'system' %}{{ messages[0].content }}{% set ns.system_done = true %}{% else %}You are a helpful assistant.{% endif %}

# Tools

<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>

For each call, return <tool_call>{"name": ..., "arguments": ...}</tool_call>.<|im_end|>
{% elif messages and messages[0].role == 'system' -%}
<|im_start|>system
{{ messages[0].content | trim }}<|im_end|>
{% set ns.system_done = true -%}
{%- endif -%}
{%- for m in messages -%}
  {%- if loop.first and m.role == 'system' and ns.system_done -%}
  {%- elif m.role == 'user' or m.role == 'system' -%}
<|im_start|>{{ m.role }}
{{ m.content if m.content is string else m.content | map(attribute='text') | join('\n') }}<|im_end|>
{% elif m.role == 'assistant' -%}
<|im_start|>assistant
{%- set content = m.content if m.content is defined and m.content is not none else '' -%}
{%- if m.reasoning_content is defined and loop.index0 > ns.last_user %}
<think>
{{ m.reasoning_content | trim }}
</think>
{% endif -%}
{%- if '</think>' in content -%}{%- set content = content.split('</think>')[-1].lstrip('\n') -%}{%- endif -%}
{{ '\n' + content if content else '' }}
{%- for call in m.tool_calls | default([]) -%}
  {%- set fn = call.function if call.function is defined else call -%}
{{ '\n' if loop.first and not content else '' }}
<tool_call>
{"name": "{{ fn.name }}", "arguments": {{ fn.arguments if fn.arguments is string else fn.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif m.role == 'tool' -%}
  {%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}<|im_start|>user{%- endif %}
<tool_response>
{{ m.content }}
</tool_response>
  {%- if loop.last or loop.nextitem.role != 'tool' %}<|im_end|>
{% endif -%}
  {%- else -%}
{{ raise_exception('unknown role: ' ~ m.role) }}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif -%}
{%- endif -%})JINJA";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellserve::engine::chat;
  static const ChatTemplate tmpl = [] {
    auto t = ChatTemplate::parse(kTemplate);
    if (!t.ok()) {
      std::fprintf(stderr, "the fixed template does not parse: %s\n", t.status().to_string().c_str());
      std::abort();
    }
    return std::move(t).value();
  }();

  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = 64;  // as request bodies
  boost::json::value doc =
      boost::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), ec, {}, opts);
  if (ec) return 0;
  ChatRequest request;
  request.bos_token = "<|endoftext|>";
  request.eos_token = "<|im_end|>";
  if (doc.is_array()) {
    request.messages = std::move(doc.get_array());
  } else if (doc.is_object()) {
    boost::json::object& o = doc.get_object();
    for (auto& [key, value] : o) {
      if (key == "messages" && value.is_array()) {
        request.messages = std::move(value.get_array());
      } else if (key == "tools" && value.is_array()) {
        request.tools = std::move(value.get_array());
      } else if (key == "add_generation_prompt" && value.is_bool()) {
        request.add_generation_prompt = value.get_bool();
      } else {
        request.extra_vars[key] = std::move(value);
      }
    }
  } else {
    return 0;
  }
  volatile size_t sink = 0;
  auto text = tmpl.apply(request);
  sink = sink + (text.ok() ? text->size() : text.status().message().size());
  return 0;
}
