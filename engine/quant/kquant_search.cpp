// Scale searches of the k-quant encoders: transcriptions of ggml-quants.c's make_qx_quants,
// make_q3_quants and make_qkx2_quants. Expressions keep ggml's operand order and types
// (int * float promotions included) because the encoders must reproduce ggml's bytes.
#include "engine/quant/kquant_search.h"

#include <algorithm>
#include <cmath>

#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {
namespace {

// The weight ggml gives value x under rmse_type when there is no importance matrix.
float rmse_weight(int rmse_type, float x) {
  return rmse_type == 1 ? x * x : rmse_type == 2 ? 1.0f : rmse_type == 3 ? std::fabs(x) : std::sqrt(std::fabs(x));
}

int clamp_level(int l, int lo, int hi) { return std::max(lo, std::min(hi, l)); }

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nmax + clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    }
    return 1 / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) {
    rmse_type = -rmse_type;
    return_early = true;
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = qw ? qw[i] : rmse_weight(rmse_type, x[i]);
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = qw ? qw[i] : rmse_weight(rmse_type, x[i]);
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax + clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  if (do_rmse) {
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      L[i] = static_cast<int8_t>(l);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    // Move one level at a time to the value that is optimal given all the others.
    for (int itry = 0; itry < 5; ++itry) {
      int n_changed = 0;
      for (int i = 0; i < n; ++i) {
        const float w = x[i] * x[i];
        float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
        if (slx > 0) {
          float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
          const int new_l = clamp_level(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
          if (new_l != L[i]) {
            slx += w * x[i] * static_cast<float>(new_l);
            sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
              L[i] = static_cast<int8_t>(new_l);
              sumlx = slx;
              suml2 = sl2;
              ++n_changed;
            }
          }
        }
      }
      if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
  }
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<int8_t>(clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1) + nmax);
  }
  return 1 / iscale;
}

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * static_cast<float>(l);
      sum_l2 += w * static_cast<float>(l) * static_cast<float>(l);
      sum_xl += w * static_cast<float>(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

}  // namespace cellserve::engine::quant
