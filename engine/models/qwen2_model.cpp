// qwen2 (Qwen2, Qwen2.5): NeoX-style RoPE and biases on the q/k/v projections.
#include "engine/models/decoder_model.h"
#include "engine/models/registry.h"

namespace cellserve::engine {

Result<std::shared_ptr<const Model>> make_qwen2_model(std::shared_ptr<const GgufFile> file) {
  HparamReader r(*file, "qwen2");
  const DecoderHparams hp = read_decoder_hparams(r, *file, RopeType::Neox);
  CS_RETURN_IF_ERROR(r.status());
  return load_decoder_model(std::move(file), hp, DecoderVariant{RopeType::Neox, false, true});
}

}  // namespace cellserve::engine
