#include "engine/chat/call_args.h"

#include "engine/chat/error.h"

namespace cellserve::engine::chat {

const Value* CallArgs::keyword_arg(std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::vector<Value> bind_args(const CallArgs& args, std::initializer_list<Param> params, std::string_view fn_name) {
  const std::string fn(fn_name);
  if (args.positional.size() > params.size()) {
    fail_type(fn + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
              std::to_string(args.positional.size()) + " given)");
  }
  std::vector<std::optional<Value>> bound(params.size());
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t index = 0;
    for (const Param& p : params) {
      if (p.name == key) break;
      ++index;
    }
    if (index == params.size()) fail_type(fn + "() got an unexpected keyword argument '" + key + "'");
    if (bound[index]) fail_type(fn + "() got multiple values for argument '" + key + "'");
    bound[index] = value;
  }
  std::vector<Value> out;
  out.reserve(params.size());
  size_t index = 0;
  for (const Param& p : params) {
    if (bound[index])
      out.push_back(std::move(*bound[index]));
    else if (p.default_value)
      out.push_back(*p.default_value);
    else
      fail_type(fn + "() missing required argument '" + std::string(p.name) + "'");
    ++index;
  }
  return out;
}

}  // namespace cellserve::engine::chat
