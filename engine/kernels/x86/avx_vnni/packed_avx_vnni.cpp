// The VNNI packed-group dot products (../packed_vnni_body.h) with AVX-VNNI's VEX vpdpbusd, for
// CPUs that have it without AVX-512 (Intel Alder Lake and later cores, including the N100-class
// boxes a fleet may hold).
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/kernels/x86/avx_vnni/avx_vnni_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86::avx_vnni {
namespace {
inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }
}  // namespace

#include "engine/kernels/x86/packed_vnni_body.h"

}  // namespace cellserve::engine::kernels::x86::avx_vnni
