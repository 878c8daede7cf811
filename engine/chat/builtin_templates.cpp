#include "engine/chat/builtin_templates.h"

#include <array>
#include <string>

namespace cellserve::engine::chat {
namespace {

// Every `{{-`/`{%-` below strips the layout whitespace before it, so only the quoted strings
// reach the prompt (the interpreter also applies trim_blocks and lstrip_blocks, as Hugging Face).
//
// None writes bos_token, although Meta's and Mistral's templates do: the tokenizer adds BOS where
// the model asks for it (Llama 3 and Mistral GGUFs do), which gives the same tokens there, and a
// model that takes no BOS gets none. The rendered text is then llama-server's for its built-ins
// of the same format ("llama3", "mistral-v7-tekken").

// The same as Qwen2.5's rendering of a conversation with a system message and no tools, and as
// llama.cpp's "chatml"; nothing is added when there is no system message.
constexpr std::string_view kChatml = R"jinja(
{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)jinja";

// Meta's Llama 3 Instruct format. The contents are trimmed, as Meta's templates do; a tool
// result takes Llama 3.1's "ipython" role. Llama 3.1's template also writes a "Cutting Knowledge
// Date" system header, which this one leaves to the system message.
constexpr std::string_view kLlama3 = R"jinja(
{%- for message in messages %}
    {%- set role = 'ipython' if message.role == 'tool' else message.role %}
    {{- '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + (message.content | trim) + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)jinja";

// Mistral's v7 ("tekken") format, as Mistral Small 3.2 renders it, without its default system
// prompt. The reply follows [/INST] directly, so there is no generation prompt to add.
constexpr std::string_view kMistral = R"jinja(
{%- for message in messages %}
    {%- if message.role == 'system' %}
        {{- '[SYSTEM_PROMPT]' + message.content + '[/SYSTEM_PROMPT]' }}
    {%- elif message.role == 'user' %}
        {{- '[INST]' + message.content + '[/INST]' }}
    {%- elif message.role == 'assistant' %}
        {{- message.content + eos_token }}
    {%- elif message.role == 'tool' %}
        {{- '[TOOL_RESULTS]' + message.content + '[/TOOL_RESULTS]' }}
    {%- endif %}
{%- endfor %}
)jinja";

// Qwen3's format: chatml, a system turn that lists the tools, tool calls as <tool_call> JSON,
// consecutive tool results as one user turn of <tool_response> blocks, and <think> blocks shown
// only for the assistant turns after the last real user message (earlier reasoning is dropped).
// `enable_thinking: false` opens the reply with an empty <think> block.
// Qwen3 exactly as published (tokenizer_config.json of Qwen/Qwen3-0.6B; shared/testdata
// qwen3-tiny carries it): engine/synth writes this text into the models it makes.
constexpr std::string_view kQwen3 = R"jinja({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %})jinja";

struct Builtin {
  std::string_view name;
  std::string_view source;
};

// Alphabetical: builtin_chat_template_names() and the error messages list them in this order.
constexpr std::array<Builtin, 4> kBuiltins{{
    {"chatml", kChatml},
    {"llama3", kLlama3},
    {"mistral", kMistral},
    {"qwen3", kQwen3},
}};

constexpr std::array<std::string_view, kBuiltins.size()> kNames = [] {
  std::array<std::string_view, kBuiltins.size()> names{};
  for (size_t i = 0; i < kBuiltins.size(); ++i) names[i] = kBuiltins[i].name;
  return names;
}();

}  // namespace

std::optional<std::string_view> builtin_chat_template(std::string_view name) {
  for (const Builtin& b : kBuiltins) {
    if (b.name == name) return b.source;
  }
  return std::nullopt;
}

std::span<const std::string_view> builtin_chat_template_names() { return kNames; }

std::string builtin_chat_template_list() {
  std::string out;
  for (std::string_view name : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace cellserve::engine::chat
