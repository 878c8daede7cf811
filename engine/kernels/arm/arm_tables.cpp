#include "engine/kernels/arm/arm_tables.h"
#include "engine/kernels/arm/dot_peak_arm.h"
#include "engine/kernels/isa_tables.h"

namespace cellserve::engine::kernels {

const KernelTable& neon_kernels() {
  static const KernelTable table = [] {
    KernelTable t = reference_kernels();
    t.isa = "neon";
    arm::add_neon_legacy(t);
    arm::add_neon_kquants(t);
    t.int8_dot_peak = arm::neon::int8_dot_peak;
    t.bf16_dot_peak = arm::neon::bf16_dot_peak;
    return t;
  }();
  return table;
}

const KernelTable& neon_dotprod_kernels() {
  static const KernelTable table = [] {
    KernelTable t = neon_kernels();
    t.isa = "neon-dotprod";
    arm::add_dotprod_legacy(t);
    arm::add_dotprod_kquants(t);
    t.int8_dot_peak = arm::dotprod::int8_dot_peak;
    return t;
  }();
  return table;
}

const KernelTable& neon_i8mm_kernels() {
  static const KernelTable table = [] {
    KernelTable t = neon_dotprod_kernels();
    t.isa = "neon-i8mm";
    arm::add_i8mm_legacy(t);
    arm::add_i8mm_kquants(t);
    t.int8_dot_peak = arm::i8mm::int8_dot_peak;
    return t;
  }();
  return table;
}

}  // namespace cellserve::engine::kernels
