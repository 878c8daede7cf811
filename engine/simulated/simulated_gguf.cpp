#include "engine/simulated/simulated_gguf.h"

#include <optional>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/synth/vocab_synth.h"

namespace cellserve::engine::simulated {
namespace {

// 256 bytes, then merge-built tokens grown breadth-first from " " and a-z (synth's scheme): the
// 702 pairs, then every extension of a pair by one letter.
constexpr int64_t kOrdinaryTokens = 256 + 27 * 26 + 27 * 26 * 26;
constexpr int64_t kQwen25AddedTokens = 22;

synth::VocabSpec vocab_spec() {
  synth::VocabSpec v;
  v.kind = synth::VocabKind::Gpt2;
  v.pre = "qwen2";
  v.n_ordinary = kOrdinaryTokens;
  v.n_vocab = kOrdinaryTokens + kQwen25AddedTokens;
  v.added = synth::AddedTokens::Qwen25;
  v.bos = "<|endoftext|>";
  v.pad = "<|endoftext|>";
  v.eos = "<|im_end|>";
  v.add_bos = false;
  v.chat_template = synth::ChatTemplate::Qwen25;
  return v;
}

// Keeps the bytes a GgufFile parsed from memory points into.
struct Image {
  std::vector<std::byte> bytes;
  std::optional<GgufFile> file;
};

}  // namespace

Result<std::shared_ptr<const GgufFile>> simulated_gguf() {
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string(std::string(kSimulatedArchitecture)));
  writer.set("general.name", GgufValue::string("cellserve-simulated"));
  CS_ASSIGN_OR_RETURN(const std::vector<GgufKeyValue> tokenizer, synth::tokenizer_metadata(vocab_spec()));
  for (const GgufKeyValue& kv : tokenizer) writer.set(kv.key, kv.value);
  auto image = std::make_shared<Image>();
  image->bytes = writer.to_bytes();
  CS_ASSIGN_OR_RETURN(GgufFile file, GgufFile::parse(image->bytes));
  image->file.emplace(std::move(file));
  return std::shared_ptr<const GgufFile>(image, &*image->file);
}

}  // namespace cellserve::engine::simulated
