#include "server/tool_calls/call_ids.h"

#include <random>

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr std::string_view kAlphanumerics = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

bool is_alphanumeric(char c) { return kAlphanumerics.find(c) != std::string_view::npos; }

}  // namespace

std::string make_call_id(bool nine_characters) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<std::size_t> pick(0, kAlphanumerics.size() - 1);
  std::string id = nine_characters ? "" : "call_";
  const int count = nine_characters ? 9 : 24;
  for (int i = 0; i < count; ++i) id += kAlphanumerics[pick(rng)];
  return id;
}

bool usable_call_id(std::string_view written, bool nine_characters) {
  if (nine_characters) {
    if (written.size() != 9) return false;
    for (char c : written) {
      if (!is_alphanumeric(c)) return false;
    }
    return true;
  }
  if (written.empty() || written.size() > 64) return false;
  for (char c : written) {
    if (!is_alphanumeric(c) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace cellserve::server::tool_calls::detail
