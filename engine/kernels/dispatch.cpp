// Chooses the kernel table once per process: the best the CPU supports, unless CELLSERVE_ISA
// names another.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/isa_tables.h"
#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels {

std::vector<const KernelTable*> available_kernels() {
  std::vector<const KernelTable*> tables{&reference_kernels()};
  [[maybe_unused]] const CpuFeatures& cpu = cpu_features();
#if defined(CELLSERVE_KERNELS_X86)
  if (cpu.avx2) tables.push_back(&avx2_kernels());
  if (cpu.avx2 && cpu.avx_vnni) tables.push_back(&avx_vnni_kernels());
  if (cpu.avx2 && cpu.avx512) tables.push_back(&avx512_kernels());
  if (cpu.avx2 && cpu.avx512 && cpu.avx512_vnni) tables.push_back(&avx512_vnni_kernels());
  if (cpu.avx2 && cpu.avx512 && cpu.avx512_vnni && cpu.avx512_bf16) tables.push_back(&avx512_bf16_kernels());
#endif
#if defined(CELLSERVE_KERNELS_ARM)
  if (cpu.neon) tables.push_back(&neon_kernels());
  if (cpu.dotprod) tables.push_back(&neon_dotprod_kernels());
  if (cpu.i8mm) tables.push_back(&neon_i8mm_kernels());
#endif
  return tables;
}

Result<const KernelTable*> kernels_for_isa(std::string_view isa) {
  if (isa == "reference") isa = "generic";
  std::string names;
  for (const KernelTable* t : available_kernels()) {
    if (t->isa == isa) return t;
    names += names.empty() ? "" : ", ";
    names += t->isa;
  }
  return Status::invalid_argument("unknown or unsupported kernel ISA '" + std::string(isa) +
                                  "' (available on this host: " + names + ")");
}

const KernelTable& active_kernels() {
  static const KernelTable* table = [] {
    if (const char* forced = std::getenv("CELLSERVE_ISA"); forced != nullptr && *forced != 0) {
      auto t = kernels_for_isa(forced);
      if (t.ok()) return *t;
      std::fprintf(stderr, "cellserve: CELLSERVE_ISA: %s; using the best available kernels\n",
                   t.status().message().c_str());
    }
    return available_kernels().back();
  }();
  return *table;
}

}  // namespace cellserve::engine::kernels
