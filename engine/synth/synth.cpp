#include "engine/synth/synth.h"

#include <memory>

#include "engine/quant/quantize.h"
#include "engine/synth/model_metadata.h"
#include "engine/synth/presets.h"
#include "engine/synth/weight_fill.h"

namespace cellserve::engine::synth {

uint64_t ModelPlan::tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& t : tensors) total += ggml_row_size(t.type, t.shape.ne[0]) * static_cast<uint64_t>(t.shape.rows());
  return total;
}

uint64_t ModelPlan::parameter_count() const {
  uint64_t total = 0;
  for (const auto& t : tensors) total += static_cast<uint64_t>(t.shape.elements());
  return total;
}

Result<ModelPlan> plan_model(const SynthRequest& request, PlanContents contents) {
  ModelPlan plan;
  CS_ASSIGN_OR_RETURN(plan.shape, find_preset(request.arch, request.shape));
  plan.type = request.type;
  plan.contents = contents;
  CS_ASSIGN_OR_RETURN(plan.tensors, build_tensor_plan(plan.shape, request.type));
  CS_ASSIGN_OR_RETURN(plan.metadata, build_metadata(plan.shape, request.type, contents == PlanContents::Full));
  return plan;
}

Result<GgufWriter> make_writer(const ModelPlan& plan, const WriteOptions& options) {
  if (plan.contents != PlanContents::Full) {
    return Status::invalid_argument("a plan made without its tokenizer cannot be written");
  }
  GgufWriter writer;
  for (const auto& kv : plan.metadata) writer.set(kv.key, kv.value);
  const RopeFreqParams rope = rope_freq_params(plan.shape);
  const size_t count = plan.tensors.size();
  for (size_t i = 0; i < count; ++i) {
    const PlannedTensor& t = plan.tensors[i];
    if (!can_quantize(t.type)) {
      return Status::unimplemented(t.name + ": no quantizer for type " + std::string(ggml_type_name(t.type)));
    }
    GgufWriter::TensorFiller fill = make_filler(t, rope, options.seed, options.n_threads);
    if (options.progress) {
      fill = [fill = std::move(fill), progress = options.progress, i, count, t](std::span<std::byte> out) {
        progress(i, count, t);
        fill(out);
      };
    }
    CS_RETURN_IF_ERROR(writer.add_tensor(t.name, t.type, t.shape, std::move(fill)));
  }
  return writer;
}

Status write_model(const ModelPlan& plan, const std::string& path, const WriteOptions& options) {
  CS_ASSIGN_OR_RETURN(GgufWriter writer, make_writer(plan, options));
  return writer.write(path);
}

}  // namespace cellserve::engine::synth
