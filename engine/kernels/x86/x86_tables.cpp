#include "engine/kernels/x86/x86_tables.h"
#include "engine/kernels/isa_tables.h"

namespace cellserve::engine::kernels {

const KernelTable& avx2_kernels() {
  static const KernelTable table = [] {
    KernelTable t = reference_kernels();
    t.isa = "avx2";
    x86::add_avx2_legacy(t);
    x86::add_avx2_kquants(t);
    return t;
  }();
  return table;
}

}  // namespace cellserve::engine::kernels
