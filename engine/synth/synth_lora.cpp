#include "engine/synth/synth_lora.h"

#include <cmath>

#include "engine/synth/weight_fill.h"

namespace cellserve::engine::synth {

Result<GgufWriter> make_lora_writer(const GgufFile& base, const LoraSynthRequest& request,
                                    const WriteOptions& options) {
  if (request.rank < 1) return Status::invalid_argument("the LoRA rank must be at least 1");
  if (request.type != GgmlType::F32 && request.type != GgmlType::F16 && request.type != GgmlType::BF16 &&
      request.type != GgmlType::Q8_0) {
    return Status::invalid_argument("adapter type must be F32, F16, BF16 or Q8_0");
  }
  GgufWriter w;
  const std::string arch = base.get_string("general.architecture").value_or("");
  w.set("general.architecture", GgufValue::string(arch));
  w.set("general.type", GgufValue::string("adapter"));
  w.set("general.name", GgufValue::string("synth-lora-r" + std::to_string(request.rank)));
  w.set("adapter.type", GgufValue::string("lora"));
  w.set("adapter.lora.alpha", GgufValue::f32(request.alpha));

  const RopeFreqParams no_rope;
  size_t n_adapted = 0;
  for (const GgufTensorInfo& t : base.tensors()) {
    bool wanted = false;
    for (const std::string& target : request.targets) {
      const std::string suffix = "." + target + ".weight";
      wanted = wanted || (t.name.rfind("blk.", 0) == 0 && t.name.size() > suffix.size() &&
                          t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0);
    }
    if (!wanted) continue;
    const int64_t n_in = t.shape.ne[0], n_out = t.shape.ne[1];
    PlannedTensor a{t.name + ".lora_a", make_shape({n_in, request.rank}), request.type,
                    WeightInit{InitKind::Normal, 1.0f / std::sqrt(static_cast<float>(n_in))}};
    PlannedTensor b{t.name + ".lora_b", make_shape({request.rank, n_out}), request.type,
                    WeightInit{InitKind::Normal, 0.15f / std::sqrt(static_cast<float>(request.rank))}};
    for (const PlannedTensor& p : {a, b}) {
      CS_RETURN_IF_ERROR(
          w.add_tensor(p.name, p.type, p.shape, make_filler(p, no_rope, options.seed, options.n_threads)));
    }
    ++n_adapted;
  }
  if (n_adapted == 0) return Status::invalid_argument("no tensor of the base model matches the LoRA targets");
  return w;
}

}  // namespace cellserve::engine::synth
