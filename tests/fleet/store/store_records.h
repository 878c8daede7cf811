// Records the store suite writes and compares (store_test.cpp and its siblings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet/store/store.h"

namespace cellserve::fleet {

inline constexpr int64_t kT0 = 1'700'000'000'000;  // a Unix time in ms
inline constexpr int64_t kHour = 60 * 60 * 1000;

// A processor with every field set to a value that tells it apart (ids and names from `id`).
Processor make_processor(const std::string& id, double price, int64_t registered_ms);
// A deployment whose spec sets every field the store keeps in columns of its own.
Deployment make_deployment(const std::string& name, int replicas, int spares, int64_t created_ms);

// Field by field, each mismatch a test failure naming the field.
void expect_same(const Processor& a, const Processor& b);
void expect_same(const Requirements& a, const Requirements& b);
void expect_same(const Deployment& a, const Deployment& b);
void expect_same(const Replica& a, const Replica& b);

// The deployment's rows (none, and a test failure, when the read fails).
std::vector<Replica> replicas_of(Store& store, const std::string& deployment);
// Its row `index` (an empty row, and a test failure, when there is none).
Replica replica_at(Store& store, const std::string& deployment, int index);

}  // namespace cellserve::fleet
