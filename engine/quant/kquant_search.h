// The scale searches behind the k-quant encoders, from llama.cpp's ggml-quants.c. Each fits
// n values to integer levels and returns the scale; they are deterministic and bit-exact with
// ggml when compiled without floating-point contraction (see CMakeLists.txt).
#pragma once

#include <cstdint>

namespace cellserve::engine::quant {

// Values below this magnitude count as zero (ggml's GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric fit (ggml make_qx_quants): levels L[i] in [0, 2*nmax) stand for L[i] - nmax.
// Tries iscale = -(nmax + 0.1*is)/max for is in [-9, 9] and keeps the weighted least-squares
// best. Weights: qw if non-null, else by rmse_type (1: x^2, 2: 1, 3: |x|, else sqrt|x|);
// rmse_type 0 skips the search; a negative rmse_type returns early (ggml semantics).
// Returns the scale; 0 (all L = 0) for an all-zero group.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);

// Symmetric 3-bit fit with iterative level refinement (ggml make_q3_quants); L in [0, 2*nmax).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

// Asymmetric fit x ~ scale * L + min with L in [0, nmax] (ggml make_qkx2_quants). Tries
// nstep + 1 candidate scales (rmin + rdelta*is + nmax)/(max - min) and solves scale and min
// by weighted least squares for each; error is weighted squared (or absolute if use_mad).
// Stores -min (>= 0) in *the_min, uses Laux (n bytes) as scratch, returns the scale.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace cellserve::engine::quant
