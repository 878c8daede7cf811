// The VNNI packed-group dot products (../packed_vnni_body.h) with AVX512-VNNI's EVEX vpdpbusd on
// 256-bit registers (AVX512-VL).
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/kernels/x86/avx512_vnni/vnni_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86::vnni {
namespace {
inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
}  // namespace

#include "engine/kernels/x86/packed_vnni_body.h"

}  // namespace cellserve::engine::kernels::x86::vnni
