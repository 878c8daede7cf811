// The completion cost of the rest of an object (schema.h): required entries, the entries that
// minProperties still needs, commas and the closing brace.
#include <algorithm>

#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

int64_t SchemaNode::cheapest_optional(uint32_t a, uint32_t k, bool free_slot) const {
  if (k == 0) return 0;
  if (opt_prefix.empty()) return kInf;  // only minProperties asks for more than the required
  const std::vector<int64_t>& listed = opt_prefix[a];
  const uint32_t n_listed = static_cast<uint32_t>(listed.size() - 1);
  const int64_t all_listed = k <= n_listed ? listed[k] : kInf;
  if (!free_slot || k - 1 > n_listed) return all_listed;
  return std::min(all_listed, add_cost(listed[k - 1], free_entry));
}

int64_t SchemaNode::object_rest(uint32_t a, uint32_t listed, uint32_t free, Rest where) const {
  const uint32_t required = req_count[a];
  const uint64_t counted = uint64_t{listed} + (free > 0 ? 1 : 0) + required;
  const uint32_t more = min_props > counted ? static_cast<uint32_t>(min_props - counted) : 0;
  uint64_t entries = uint64_t{required} + more;
  int64_t extra = cheapest_optional(a, more, free_viable() && free == 0);
  if (where == Rest::AfterComma && entries == 0) {  // the comma needs an entry, any one
    extra = std::min(opt_entry_min[a], free_allowed(a) ? free_entry : kInf);
    entries = 1;
  }
  if (uint64_t{listed} + free + entries > max_props) return kInf;
  // After a value: a comma before each entry and the brace. After a comma: one comma fewer.
  // After the opening brace: commas between the entries and the closing brace.
  int64_t separators = static_cast<int64_t>(entries);
  if (where == Rest::AfterValue) separators += 1;
  if (where == Rest::Open) separators = std::max<int64_t>(separators, 1);
  return add_cost(add_cost(req_sum[a], extra), separators);
}

}  // namespace cellserve::engine::grammar
