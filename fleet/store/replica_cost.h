// The cost rule every Store applies to replica rows (store.h, update_replica), in one place so
// that SQLite and PostgreSQL bill alike.
#pragma once

#include <cstdint>

#include "fleet/store/records.h"

namespace cellserve::fleet {

// Cost of the open served interval of `r` at `now_ms` (0 when not serving).
double open_interval_cost(const Replica& r, int64_t now_ms);

// `next` replaces `prev` at `now_ms`; sets next.cost and next.ready_since_ms from prev. Leaving
// Ready, or changing processor or price while Ready, closes the interval at prev's price;
// entering Ready (or the change) opens a new one.
void carry_cost(const Replica& prev, Replica& next, int64_t now_ms);

}  // namespace cellserve::fleet
