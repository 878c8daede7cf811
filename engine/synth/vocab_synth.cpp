#include "engine/synth/vocab_synth.h"

#include <cstdio>

#include "engine/synth/chat_templates.h"

namespace cellserve::engine::synth {
namespace {

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8(uint32_t cp) {
  std::string s;
  append_utf8(&s, cp);
  return s;
}

// GPT-2's bytes_to_unicode(): the printable bytes map to themselves and come first (in byte
// order); the other 68 bytes map to U+0100.. in byte order. Token id i < 256 is entry i.
std::vector<std::string> byte_level_tokens() {
  std::vector<std::string> printable;
  std::vector<std::string> rest;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    if (keep) {
      printable.push_back(utf8(b));
    } else {
      rest.push_back(utf8(next++));
    }
  }
  printable.insert(printable.end(), rest.begin(), rest.end());
  return printable;
}

// Appends `count` tokens grown breadth-first from `seeds` by one letter a-z at a time; calls
// on_token(left, right) for each (the merge that builds it). Every token is new: it is a
// distinct (left, letter) pair and longer than every seed.
template <typename OnToken>
void grow_tokens(const std::vector<std::string>& seeds, int64_t count, OnToken on_token) {
  std::vector<std::string> queue = seeds;
  for (size_t qi = 0; count > 0; ++qi) {
    const std::string left = queue[qi];
    for (char c = 'a'; c <= 'z' && count > 0; ++c, --count) {
      const std::string right(1, c);
      on_token(left, right);
      queue.push_back(left + right);
    }
  }
}

std::vector<std::string> lowercase_seeds(const std::string& first) {
  std::vector<std::string> seeds = {first};
  for (char c = 'a'; c <= 'z'; ++c) seeds.emplace_back(1, c);
  return seeds;
}

// The real added tokens, in their published order, with their token types.
std::vector<std::pair<std::string, TokenType>> added_tokens(AddedTokens set) {
  std::vector<std::pair<std::string, TokenType>> out;
  if (set == AddedTokens::Qwen25 || set == AddedTokens::Qwen3) {
    static const char* const kQwen[] = {
        "<|endoftext|>",  "<|im_start|>",   "<|im_end|>",      "<|object_ref_start|>", "<|object_ref_end|>",
        "<|box_start|>",  "<|box_end|>",    "<|quad_start|>",  "<|quad_end|>",         "<|vision_start|>",
        "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",   "<|video_pad|>",        "<tool_call>",
        "</tool_call>",   "<|fim_prefix|>", "<|fim_middle|>",  "<|fim_suffix|>",       "<|fim_pad|>",
        "<|repo_name|>",  "<|file_sep|>",   "<tool_response>", "</tool_response>",     "<think>",
        "</think>"};
    const size_t n = set == AddedTokens::Qwen25 ? 22 : 26;
    for (size_t i = 0; i < n; ++i) {
      const std::string t = kQwen[i];
      // Qwen flags the <|...|> tokens special (CONTROL); the tool/think tags are plain added
      // tokens (USER_DEFINED), as in shared/testdata's qwen3-tiny.
      out.emplace_back(t, t.rfind("<|", 0) == 0 ? TokenType::Control : TokenType::UserDefined);
    }
  } else if (set == AddedTokens::Llama3) {
    static const char* const kNamed[] = {"<|begin_of_text|>",
                                         "<|end_of_text|>",
                                         "<|reserved_special_token_0|>",
                                         "<|reserved_special_token_1|>",
                                         "<|finetune_right_pad_id|>",
                                         "<|reserved_special_token_2|>",
                                         "<|start_header_id|>",
                                         "<|end_header_id|>",
                                         "<|eom_id|>",
                                         "<|eot_id|>",
                                         "<|python_tag|>"};
    for (const char* t : kNamed) out.emplace_back(t, TokenType::Control);
    for (int i = 3; i <= 247; ++i) {
      out.emplace_back("<|reserved_special_token_" + std::to_string(i) + "|>", TokenType::Control);
    }
  }
  return out;
}

Result<SynthVocab> build_bpe_vocab(const VocabSpec& spec) {
  SynthVocab v;
  const auto added = added_tokens(spec.added);
  if (spec.n_ordinary + static_cast<int64_t>(added.size()) > spec.n_vocab) {
    return Status::invalid_argument("vocabulary of " + std::to_string(spec.n_vocab) + " cannot hold " +
                                    std::to_string(spec.n_ordinary) + " ordinary and " + std::to_string(added.size()) +
                                    " added tokens");
  }
  v.tokens = byte_level_tokens();
  v.types.assign(v.tokens.size(), static_cast<int32_t>(TokenType::Normal));
  // Merge-built tokens: "Ġ" (a space) or a letter, grown letter by letter.
  grow_tokens(lowercase_seeds(utf8(0x120)), spec.n_ordinary - 256, [&](const std::string& l, const std::string& r) {
    v.merges.push_back(l + " " + r);
    v.tokens.push_back(l + r);
    v.types.push_back(static_cast<int32_t>(TokenType::Normal));
  });
  for (const auto& [text, type] : added) {
    v.tokens.push_back(text);
    v.types.push_back(static_cast<int32_t>(type));
  }
  // convert_hf_to_gguf.py pads a config vocab_size larger than the tokenizer with [PADn].
  while (static_cast<int64_t>(v.tokens.size()) < spec.n_vocab) {
    v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
    v.types.push_back(static_cast<int32_t>(TokenType::Unused));
  }
  return v;
}

SynthVocab build_spm_vocab(const VocabSpec& spec) {
  SynthVocab v;
  auto add = [&](std::string text, TokenType type, float score) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(static_cast<int32_t>(type));
    v.scores.push_back(score);
  };
  add("<unk>", TokenType::Unknown, 0.0f);
  add("<s>", TokenType::Control, 0.0f);
  add("</s>", TokenType::Control, 0.0f);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, TokenType::Byte, 0.0f);
  }
  // Pieces: "▁" and a-z, then grown letter by letter; scores -0, -1, -2, ... (rank order).
  const std::vector<std::string> seeds = lowercase_seeds("\xE2\x96\x81");
  float score = 0.0f;
  for (const std::string& s : seeds) {
    if (static_cast<int64_t>(v.tokens.size()) < spec.n_vocab) add(s, TokenType::Normal, -score++);
  }
  const int64_t remaining = spec.n_vocab - static_cast<int64_t>(v.tokens.size());
  grow_tokens(seeds, remaining,
              [&](const std::string& l, const std::string& r) { add(l + r, TokenType::Normal, -score++); });
  return v;
}

Result<uint32_t> token_id(const SynthVocab& v, const std::string& text) {
  for (size_t i = v.tokens.size(); i-- > 0;) {  // special tokens sit near the end
    if (v.tokens[i] == text) return static_cast<uint32_t>(i);
  }
  return Status::internal("special token '" + text + "' is not in the vocabulary");
}

}  // namespace

const std::string& chat_template_text(ChatTemplate tmpl) {
  static const std::string kNone;
  switch (tmpl) {
    case ChatTemplate::None:
      return kNone;
    case ChatTemplate::Qwen25:
      return qwen25_chat_template();
    case ChatTemplate::Qwen3:
      return qwen3_chat_template();
    case ChatTemplate::Qwen35:
      return qwen35_chat_template();
    case ChatTemplate::Llama32:
      return llama32_chat_template();
  }
  return kNone;
}

Result<SynthVocab> build_vocab(const VocabSpec& spec) {
  if (spec.kind == VocabKind::Spm) return build_spm_vocab(spec);
  return build_bpe_vocab(spec);
}

Result<std::vector<GgufKeyValue>> tokenizer_metadata(const VocabSpec& spec) {
  CS_ASSIGN_OR_RETURN(SynthVocab v, build_vocab(spec));
  std::vector<GgufKeyValue> kv;
  const bool spm = spec.kind == VocabKind::Spm;
  kv.push_back({"tokenizer.ggml.model", GgufValue::string(spm ? "llama" : "gpt2")});
  if (!spm) kv.push_back({"tokenizer.ggml.pre", GgufValue::string(spec.pre)});
  kv.push_back({"tokenizer.ggml.tokens", GgufValue::string_array(v.tokens)});
  if (spm) kv.push_back({"tokenizer.ggml.scores", GgufValue::f32_array(v.scores)});
  kv.push_back({"tokenizer.ggml.token_type", GgufValue::i32_array(v.types)});
  if (!spm) kv.push_back({"tokenizer.ggml.merges", GgufValue::string_array(v.merges)});
  auto special = [&](const std::string& key, const std::string& text) -> Status {
    if (text.empty()) return {};
    CS_ASSIGN_OR_RETURN(uint32_t id, token_id(v, text));
    kv.push_back({key, GgufValue::u32(id)});
    return {};
  };
  if (spm) {
    CS_RETURN_IF_ERROR(special("tokenizer.ggml.bos_token_id", "<s>"));
    CS_RETURN_IF_ERROR(special("tokenizer.ggml.eos_token_id", "</s>"));
    CS_RETURN_IF_ERROR(special("tokenizer.ggml.unknown_token_id", "<unk>"));
  } else {
    CS_RETURN_IF_ERROR(special("tokenizer.ggml.eos_token_id", spec.eos));
    CS_RETURN_IF_ERROR(special("tokenizer.ggml.padding_token_id", spec.pad));
    CS_RETURN_IF_ERROR(special("tokenizer.ggml.bos_token_id", spec.bos));
  }
  if (spec.add_bos) kv.push_back({"tokenizer.ggml.add_bos_token", GgufValue::boolean(*spec.add_bos)});
  if (spec.chat_template != ChatTemplate::None) {
    kv.push_back({"tokenizer.chat_template", GgufValue::string(chat_template_text(spec.chat_template))});
  }
  return kv;
}

}  // namespace cellserve::engine::synth
