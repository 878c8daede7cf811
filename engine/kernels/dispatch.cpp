// Chooses the kernel table once per process.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels {

Result<const KernelTable*> kernels_for_isa(std::string_view isa) {
  if (isa == "generic" || isa == "reference") return &reference_kernels();
  return Status::invalid_argument("unknown or unsupported kernel ISA '" + std::string(isa) +
                                  "' (available on this host: generic)");
}

const KernelTable& active_kernels() {
  static const KernelTable* table = [] {
    if (const char* forced = std::getenv("CELLSERVE_ISA"); forced != nullptr && *forced != 0) {
      auto t = kernels_for_isa(forced);
      if (t.ok()) return *t;
      std::fprintf(stderr, "cellserve: CELLSERVE_ISA: %s; using generic kernels\n", t.status().message().c_str());
    }
    return &reference_kernels();
  }();
  return *table;
}

}  // namespace cellserve::engine::kernels
