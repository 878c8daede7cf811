#include "engine/chat/chat_template.h"

#include <boost/json.hpp>

#include "engine/chat/ast.h"
#include "engine/chat/error.h"
#include "engine/chat/parser.h"
#include "engine/chat/renderer.h"
#include "engine/chat/user_data.h"

namespace cellserve::engine::chat {
namespace {

namespace json = boost::json;

// `user`: the value is request data, so its strings (object keys too) are marked as such.
Value from_json(const json::value& v, int depth, bool user) {
  if (depth > kMaxValueDepth) fail(ErrorKind::Limit, "JSON nested too deeply");
  switch (v.kind()) {
    case json::kind::null:
      return Value::none();
    case json::kind::bool_:
      return Value::boolean(v.get_bool());
    case json::kind::int64:
      return Value::integer(v.get_int64());
    case json::kind::uint64:
      if (v.get_uint64() > static_cast<uint64_t>(INT64_MAX)) fail(ErrorKind::Type, "JSON integer out of 64-bit range");
      return Value::integer(static_cast<int64_t>(v.get_uint64()));
    case json::kind::double_:
      return Value::floating(v.get_double());
    case json::kind::string:
      return derived_string(std::string(v.get_string()), user);
    case json::kind::array: {
      ValueList items;
      items.reserve(v.get_array().size());
      for (const json::value& item : v.get_array()) items.push_back(from_json(item, depth + 1, user));
      return Value::list(std::move(items));
    }
    case json::kind::object: {
      Dict d;
      for (const auto& kv : v.get_object())
        d.append(derived_string(std::string(kv.key()), user), from_json(kv.value(), depth + 1, user));
      return Value::dict(std::move(d));
    }
  }
  return Value::none();
}

Status to_status(const TemplateError& e) {
  const std::string located = e.line() > 0 ? "line " + std::to_string(e.line()) + ": " + e.message() : e.message();
  switch (e.kind()) {
    case ErrorKind::Raised:
      return Status::invalid_argument(e.message());
    case ErrorKind::Unsupported:
      return Status::unimplemented(located);
    case ErrorKind::Limit:
      return Status::resource_exhausted(located);
    default:
      return Status::invalid_argument(located);
  }
}

}  // namespace

json::object chat_request_context(const ChatRequest& request) {
  json::object context;
  context["bos_token"] = request.bos_token;
  context["eos_token"] = request.eos_token;
  context["messages"] = request.messages;
  if (request.tools) context["tools"] = *request.tools;
  context["add_generation_prompt"] = request.add_generation_prompt;
  for (const auto& kv : request.extra_vars) context[kv.key()] = kv.value();
  return context;
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  try {
    return ChatTemplate(parse_template(source));
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of memory while parsing the chat template");
  } catch (const std::exception& e) {
    return Status::internal(std::string("chat template parser: ") + e.what());
  }
}

Result<std::string> ChatTemplate::render(const json::object& context, const RenderOptions& options) const {
  CS_ASSIGN_OR_RETURN(MarkedText out, render_marked(context, {}, options));
  return std::move(out.text);
}

Result<MarkedText> ChatTemplate::render_marked(const json::object& context, const json::object& data,
                                               const RenderOptions& options) const {
  try {
    Dict vars;
    for (const auto& kv : context) vars.append(Value::string(std::string(kv.key())), from_json(kv.value(), 0, false));
    for (const auto& kv : data) vars.set(Value::string(std::string(kv.key())), from_json(kv.value(), 0, true));
    Renderer renderer(options, std::move(vars));
    return renderer.render(*template_);
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of memory while rendering the chat template");
  } catch (const std::exception& e) {
    return Status::internal(std::string("chat template renderer: ") + e.what());
  }
}

Result<std::string> ChatTemplate::apply(const ChatRequest& request, const RenderOptions& options) const {
  CS_ASSIGN_OR_RETURN(MarkedText out, apply_marked(request, options));
  return std::move(out.text);
}

Result<MarkedText> ChatTemplate::apply_marked(const ChatRequest& request, const RenderOptions& options) const {
  try {
    // The same variables as chat_request_context(), split by who wrote them.
    json::object context;
    context["bos_token"] = request.bos_token;
    context["eos_token"] = request.eos_token;
    context["add_generation_prompt"] = request.add_generation_prompt;
    json::object data;
    data["messages"] = request.messages;
    if (request.tools) data["tools"] = *request.tools;
    for (const auto& kv : request.extra_vars) data[kv.key()] = kv.value();
    return render_marked(context, data, options);
  } catch (const std::exception& e) {
    return Status::internal(std::string("chat template: ") + e.what());
  }
}

}  // namespace cellserve::engine::chat
