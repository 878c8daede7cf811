// qwen3 (Qwen3 dense): NeoX-style RoPE and RMSNorm over each head of q and k (QK-norm); the
// head size comes from attention.key_length and may differ from n_embd / n_head.
#include "engine/models/decoder_model.h"
#include "engine/models/registry.h"

namespace cellserve::engine {

Result<std::shared_ptr<const Model>> make_qwen3_model(std::shared_ptr<const GgufFile> file) {
  HparamReader r(*file, "qwen3");
  const DecoderHparams hp = read_decoder_hparams(r, *file, RopeType::Neox);
  CS_RETURN_IF_ERROR(r.status());
  return load_decoder_model(std::move(file), hp, DecoderVariant{RopeType::Neox, true, false});
}

}  // namespace cellserve::engine
