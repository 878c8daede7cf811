// PlanBuilder: appends F32 master tensors with their initialisation to a tensor table. Shared
// by the per-architecture table builders (tensor_plan.cpp, tensor_plan_qwen35.cpp).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "engine/synth/tensor_plan.h"

namespace cellserve::engine::synth {

class PlanBuilder {
 public:
  PlanBuilder(const ModelShape& shape, std::vector<PlannedTensor>* out) : shape_(shape), out_(out) {}

  const ModelShape& shape() const { return shape_; }

  // "blk.<il>.<suffix>"
  static std::string blk(int64_t il, const std::string& suffix) { return "blk." + std::to_string(il) + "." + suffix; }

  // W[n_out][n_in] ~ N(0, (gain / sqrt(n_in))^2), stored as ne = {n_in, n_out}.
  void linear(const std::string& name, int64_t n_in, int64_t n_out, float gain = 1.0f) {
    add(name, make_shape({n_in, n_out}), {InitKind::Normal, gain / std::sqrt(static_cast<float>(n_in))});
  }
  // An RMSNorm weight of n elements: 1 + 0.1 * N(0, 1).
  void norm(const std::string& name, int64_t n) { add(name, make_shape({n}), {InitKind::Norm, 0.1f}); }
  // A 1-D tensor of n elements.
  void vector(const std::string& name, int64_t n, WeightInit init) { add(name, make_shape({n}), init); }
  void add(const std::string& name, const Shape& shape, WeightInit init) {
    out_->push_back(PlannedTensor{name, shape, GgmlType::F32, init});
  }

 private:
  const ModelShape& shape_;
  std::vector<PlannedTensor>* out_;
};

// The blocks of a qwen35 model (tensor_plan_qwen35.cpp).
void add_qwen35_blocks(PlanBuilder& b);

}  // namespace cellserve::engine::synth
