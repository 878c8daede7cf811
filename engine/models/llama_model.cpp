// llama (Llama 1/2/3.x, Mistral-style dense models): interleaved-pair ("normal") RoPE with base
// and scaling from metadata, Llama 3.1+ frequency factors (rope_freqs.weight), optional biases,
// tied or separate output.
#include "engine/models/decoder_model.h"
#include "engine/models/registry.h"

namespace cellserve::engine {

Result<std::shared_ptr<const Model>> make_llama_model(std::shared_ptr<const GgufFile> file) {
  HparamReader r(*file, "llama");
  const DecoderHparams hp = read_decoder_hparams(r, *file, RopeType::Norm);
  CS_RETURN_IF_ERROR(r.status());
  return load_decoder_model(std::move(file), hp, DecoderVariant{RopeType::Norm, false, false});
}

}  // namespace cellserve::engine
