// Filters over sequences and mappings: length, first/last, join, list, items, map/select/reject
// (with attribute paths and tests), sort, dictsort, unique, reverse, sum, min/max, batch.
// Jinja2 returns generators from several of these; here they return lists (identical once
// iterated, joined or passed to |list; printing one directly differs, see the docs).
#include <algorithm>

#include "engine/chat/filters.h"
#include "engine/chat/jinja_tests.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/renderer.h"
#include "engine/chat/user_data.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

// Jinja2's make_attrgetter: "a.b.0" walks items (getitem semantics, digits as indices).
Value get_path(Renderer& r, const Value& item, const Value& attribute) {
  if (attribute.is_integral()) return r.get_item(item, attribute);
  const std::string path = py_str(attribute);
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = r.get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// Sorting n items costs about n log n comparisons.
void charge_sort(Renderer& r, size_t n) {
  uint64_t log2n = 1;
  while ((size_t{1} << log2n) < n) ++log2n;
  r.charge(n * log2n);
}

Value lower_if_string(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value::string(py_lower(v.as_string())) : v;
}

Value f_length(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "length");
  return Value::integer(py_len(v));
}

Value f_list(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "list");
  return Value::list(iterate(v));
}

// The first or last item of an iteration, without copying the sequence.
Value end_item(const Value& v, bool last) {
  if (v.is_list() && !v.as_list().empty()) return last ? v.as_list().back() : v.as_list().front();
  if (v.is_dict() && !v.as_dict().empty())
    return last ? v.as_dict().entries().back().first : v.as_dict().entries().front().first;
  if (v.is_string() && !v.as_string().empty()) {
    const auto chars = utf8_chars(v.as_string());
    const std::string_view c = last ? chars.back() : chars.front();
    return substring(v, static_cast<size_t>(c.data() - v.as_string().data()), c.size(), false);
  }
  if (!v.is_list() && !v.is_dict() && !v.is_string()) iterate(v);  // fails for what cannot be iterated
  return Value::undefined(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
}

Value f_first(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "first");
  return end_item(v, false);
}

Value f_last(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "last");
  return end_item(v, true);
}

Value f_items(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "items");
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) fail_type("Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, val] : v.as_dict().entries()) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

Value f_join(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"d", Value::string("")}, {"attribute", Value::none()}}, "join");
  const Value sep = str_value(a[0]);
  MarkedText out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out.append(sep.as_string(), sep.user_spans());
    first = false;
    append_str(out, a[1].is_none() ? item : get_path(r, item, a[1]));
    r.check_size(out.text.size());
  }
  return Value::string(std::move(out));
}

Value f_map(Renderer& r, const Value& v, CallArgs& args) {
  ValueList out;
  if (!v.truthy()) return Value::list({});  // Jinja2: `if value:` guards the loop
  if (!args.positional.empty()) {
    const std::string filter = py_str(args.positional[0]);
    if (find_filter(filter) == nullptr)
      fail(ErrorKind::Unsupported, "map: unknown or unsupported filter '" + filter + "'");
    for (const Value& item : iterate(v)) {
      CallArgs call;
      call.positional.assign(args.positional.begin() + 1, args.positional.end());
      call.keyword = args.keyword;
      out.push_back(r.apply_filter(filter, item, call));
    }
    return Value::list(std::move(out));
  }
  auto a = bind_args(args, {{"attribute", Value()}, {"default", Value()}}, "map");
  if (a[0].is_undefined()) fail_type("map requires a filter name or attribute=");
  for (const Value& item : iterate(v)) {
    Value x = get_path(r, item, a[0]);
    out.push_back(x.is_undefined() && !a[1].is_undefined() ? a[1] : x);
  }
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select_impl(Renderer& r, const Value& v, CallArgs& args, bool with_attr, bool keep_when) {
  size_t next = 0;
  Value attribute;
  if (with_attr) {
    if (args.positional.empty()) fail_type("missing attribute argument");
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) test = py_str(args.positional[next++]);
  if (!test.empty() && test_support(test) != Support::Supported) {
    fail(ErrorKind::Unsupported, "unknown or unsupported test '" + test + "'");
  }
  ValueList out;
  if (!v.truthy()) return Value::list({});  // Jinja2: `if value:` guards the loop
  r.charge(work_units(v));
  for (const Value& item : iterate(v)) {
    const Value subject = with_attr ? get_path(r, item, attribute) : item;
    bool pass = false;
    if (test.empty()) {
      pass = subject.truthy();
    } else {
      CallArgs call;
      call.positional.assign(args.positional.begin() + static_cast<long>(next), args.positional.end());
      call.keyword = args.keyword;
      pass = r.apply_test(test, subject, call);
    }
    if (pass == keep_when) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Value f_select(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, false, true); }
Value f_reject(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, false, false); }
Value f_selectattr(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, true, true); }
Value f_rejectattr(Renderer& r, const Value& v, CallArgs& a) { return select_impl(r, v, a, true, false); }

// The sort key of `item`: its attribute path(s) (comma-separated), lower-cased unless case_sensitive.
Value sort_key(Renderer& r, const Value& item, const Value& attribute, bool case_sensitive) {
  if (attribute.is_none()) return lower_if_string(item, case_sensitive);
  if (attribute.is_string() && attribute.as_string().find(',') != std::string::npos) {
    ValueList parts;
    const std::string& spec = attribute.as_string();
    size_t start = 0;
    while (true) {
      const size_t comma = spec.find(',', start);
      const std::string part = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      parts.push_back(lower_if_string(get_path(r, item, Value::string(part)), case_sensitive));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return Value::tuple(std::move(parts));
  }
  return lower_if_string(get_path(r, item, attribute), case_sensitive);
}

Value f_sort(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(
      args,
      {{"reverse", Value::boolean(false)}, {"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}},
      "sort");
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : iterate(v)) keyed.emplace_back(sort_key(r, item, a[2], a[1].truthy()), item);
  charge_sort(r, keyed.size());
  const bool reverse = a[0].truthy();
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
  ValueList out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Value f_dictsort(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(
      args,
      {{"case_sensitive", Value::boolean(false)}, {"by", Value::string("key")}, {"reverse", Value::boolean(false)}},
      "dictsort");
  if (!v.is_dict()) fail_type("You can only sort by either mapping or sequence");
  const std::string by = py_str(a[1]);
  if (by != "key" && by != "value") fail_type("You can only sort by either 'key' or 'value'");
  ValueList pairs;
  for (const auto& [k, val] : v.as_dict().entries()) pairs.push_back(Value::tuple({k, val}));
  charge_sort(r, pairs.size());
  const size_t pos = by == "key" ? 0 : 1;
  const bool cs = a[0].truthy();
  const bool reverse = a[2].truthy();
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const Value kx = lower_if_string(x.as_list()[pos], cs);
    const Value ky = lower_if_string(y.as_list()[pos], cs);
    return reverse ? py_less(ky, kx) : py_less(kx, ky);
  });
  return Value::list(std::move(pairs));
}

Value f_unique(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}}, "unique");
  ValueList seen;
  ValueList out;
  for (const Value& item : iterate(v)) {
    const Value key = sort_key(r, item, a[1], a[0].truthy());
    if (!key.is_hashable()) fail_type("unhashable type: '" + key.type_name() + "'");
    r.charge(seen.size() / 4);  // the search below is linear
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_reverse(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "reverse");
  if (v.is_string()) return slice_value(v, std::nullopt, std::nullopt, -1);
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_sum(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"attribute", Value::none()}, {"start", Value::integer(0)}}, "sum");
  r.charge(work_units(v));
  Value total = a[1];
  for (const Value& item : iterate(v)) {
    total =
        binary_op(BinaryOp::Add, total, a[0].is_none() ? item : get_path(r, item, a[0]), r.options().max_output_bytes);
  }
  return total;
}

Value min_max(Renderer& r, const Value& v, CallArgs& args, bool want_max) {
  auto a = bind_args(args, {{"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}},
                     want_max ? "max" : "min");
  const ValueList items = iterate(v);
  r.charge(items.size());
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(r, items[0], a[1], a[0].truthy());
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(r, items[i], a[1], a[0].truthy());
    if (want_max ? py_less(best_key, key) : py_less(key, best_key)) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}
Value f_min(Renderer& r, const Value& v, CallArgs& a) { return min_max(r, v, a, false); }
Value f_max(Renderer& r, const Value& v, CallArgs& a) { return min_max(r, v, a, true); }

Value f_batch(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"linecount", {"fill_with", Value::none()}}, "batch");
  if (!a[0].is_integral() || a[0].as_int() <= 0) fail_type("batch linecount must be a positive integer");
  const auto n = static_cast<size_t>(a[0].as_int());
  ValueList out;
  ValueList current;
  for (const Value& item : iterate(v)) {
    current.push_back(item);
    if (current.size() == n) {
      out.push_back(Value::list(std::move(current)));
      current.clear();
    }
  }
  if (!current.empty()) {
    if (!a[1].is_none()) current.resize(n, a[1]);
    out.push_back(Value::list(std::move(current)));
  }
  return Value::list(std::move(out));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kSequenceFilters[] = {
    {"batch", f_batch},
    {"count", f_length},
    {"dictsort", f_dictsort},
    {"first", f_first},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"reverse", f_reverse},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"sum", f_sum},
    {"unique", f_unique},
};

}  // namespace

FilterFn find_sequence_filter(std::string_view name) {
  for (const FilterEntry& f : kSequenceFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace cellserve::engine::chat
