// Reading tokenizer.ggml.* into a Vocabulary (llama.cpp: llama_vocab::impl::load).
#include "engine/tokenizer/vocab.h"

#include <cstdio>

#include "engine/tokenizer/unicode.h"
#include "engine/tokenizer/vocab_builder.h"

namespace cellserve::engine::tokenizer {
namespace {

constexpr std::string_view kPrefix = "tokenizer.ggml.";

std::string key(std::string_view name) { return std::string(kPrefix) + std::string(name); }

// The GGUF token type -> attribute bit (anything unknown is "undefined", which renders as nothing).
uint32_t attr_from_token_type(int64_t type) {
  switch (type) {
    case 1:
      return token_attr::kNormal;
    case 2:
      return token_attr::kUnknown;
    case 3:
      return token_attr::kControl;
    case 4:
      return token_attr::kUserDefined;
    case 5:
      return token_attr::kUnused;
    case 6:
      return token_attr::kByte;
    default:
      return token_attr::kUndefined;
  }
}

// The array at `name`, required to have at least `min_items` items; nullptr when absent.
Result<const GgufArray*> find_array(const GgufFile& file, std::string_view name, size_t min_items) {
  const GgufValue* v = file.find(key(name));
  if (v == nullptr) return static_cast<const GgufArray*>(nullptr);
  const GgufArray* a = v->as_array();
  if (a == nullptr) return Status::data_loss(key(name) + " is not an array");
  if (a->items.size() < min_items) {
    return Status::data_loss(key(name) + " has " + std::to_string(a->items.size()) + " items, expected at least " +
                             std::to_string(min_items));
  }
  return a;
}

Status read_tokens(const GgufFile& file, std::vector<TokenData>& tokens) {
  CS_ASSIGN_OR_RETURN(const GgufArray* list, find_array(file, "tokens", 0));
  if (list == nullptr) return Status::not_found(key("tokens") + " is missing");
  const size_t n = list->items.size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) return Status::data_loss(key("tokens") + " is empty or too long");
  CS_ASSIGN_OR_RETURN(const GgufArray* scores, find_array(file, "scores", n));
  CS_ASSIGN_OR_RETURN(const GgufArray* types, find_array(file, "token_type", n));

  tokens.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string* text = list->items[i].as_string();
    if (text == nullptr) return Status::data_loss(key("tokens") + "[" + std::to_string(i) + "] is not a string");
    TokenData& t = tokens[i];
    // llama.cpp renames empty tokens so that every text is a distinct key.
    t.text = text->empty() ? "[EMPTY_" + std::to_string(i) + "]" : *text;
    if (scores != nullptr) {
      const auto s = scores->items[i].as_float();
      if (!s) return Status::data_loss(key("scores") + " holds a non-number");
      t.score = static_cast<float>(*s);
    }
    if (types != nullptr) {
      const auto ty = types->items[i].as_int();
      if (!ty) return Status::data_loss(key("token_type") + " holds a non-integer");
      t.attr = attr_from_token_type(*ty);
    }
  }
  return Status();
}

// tokenizer.ggml.merges: "left right" strings, rank = index. The first occurrence of a pair wins.
Status read_merges(const GgufFile& file, const Vocabulary& v, MergeTable& merges,
                   std::unordered_map<std::string, BpeMerge>& text_merges) {
  CS_ASSIGN_OR_RETURN(const GgufArray* list, find_array(file, "merges", 0));
  if (list == nullptr) return Status::not_found(key("merges") + " is missing (needed by a gpt2 tokenizer)");
  merges.reserve(list->items.size());
  std::string joined;
  int32_t next_guess = 0;
  for (size_t i = 0; i < list->items.size(); ++i) {
    const std::string* m = list->items[i].as_string();
    if (m == nullptr) return Status::data_loss(key("merges") + "[" + std::to_string(i) + "] is not a string");
    const size_t space = m->find(' ', 1);
    if (space == std::string::npos) continue;  // llama.cpp files it under ("", ""), which never matches
    const std::string_view left = std::string_view(*m).substr(0, space);
    const std::string_view right = std::string_view(*m).substr(space + 1);
    joined.assign(left);
    joined += right;
    // Merge files list merges in the order their results were added to the vocabulary, so the
    // result is usually the token after the previous one: check that before hashing.
    int32_t result = next_guess < v.n_tokens() && v.token(next_guess).text == joined ? next_guess : v.find(joined);
    if (result != kNoToken) next_guess = result + 1;
    const BpeMerge merge{static_cast<int32_t>(i), result};
    const int32_t l = v.find(left);
    const int32_t r = v.find(right);
    if (l != kNoToken && r != kNoToken) {
      merges.insert(l, r, merge);
    } else {
      text_merges.try_emplace(text_merge_key(left, right), merge);
    }
  }
  return Status();
}

// A special id from the file, kept only when it names a token (llama.cpp warns and keeps the default).
void read_special_id(const GgufFile& file, std::string_view name, int32_t n_tokens, int32_t& id) {
  const auto v = file.get_int(key(name));
  if (v && *v >= 0 && *v < n_tokens) id = static_cast<int32_t>(*v);
}

}  // namespace

Result<Vocabulary> Vocabulary::load(const GgufFile& file, const VocabularyOptions& options) {
  Vocabulary v;
  const auto model = file.get_string(key("model"));
  if (!model) return Status::not_found(key("model") + " is missing: the file has no tokenizer");
  v.model_name_ = *model;
  if (*model == "llama") {
    v.type_ = VocabType::Spm;
    v.bos_ = 1;
    v.eos_ = 2;
    v.unk_ = 0;
    v.add_space_prefix_ = true;
    v.add_bos_ = true;
  } else if (*model == "gpt2") {
    v.type_ = VocabType::Bpe;
    v.bos_ = 11;  // llama.cpp's defaults for BPE files that name none
    v.eos_ = 11;
    v.pre_name_ = options.pre_override ? *options.pre_override : file.get_string(key("pre")).value_or("");
    const auto pre = find_pre_tokenizer(v.pre_name_);
    if (!pre) {
      return Status::unimplemented("pre-tokenizer '" + (v.pre_name_.empty() ? std::string("default") : v.pre_name_) +
                                   "' is not supported (supported: qwen2, qwen35, llama-bpe, gpt-2 and aliases)");
    }
    v.pre_kind_ = pre->kind;
    v.clean_spaces_ = pre->clean_spaces;
    v.ignore_merges_ = pre->ignore_merges;
    v.add_bos_ = pre->add_bos;
  } else {
    return Status::unimplemented("tokenizer model '" + *model + "' is not supported (supported: llama, gpt2)");
  }
  if (const auto b = file.get_bool(key("add_space_prefix"))) v.add_space_prefix_ = *b;

  CS_RETURN_IF_ERROR(read_tokens(file, v.tokens_));
  if (int32_t dup = 0; !v.text_to_id_.build(v.tokens_.data(), v.tokens_.size(), &dup)) {
    return Status::data_loss(key("tokens") + " holds the text '" + v.token(dup).text + "' twice");
  }
  if (v.type_ == VocabType::Bpe) {
    CS_RETURN_IF_ERROR(read_merges(file, v, v.merges_, v.text_merges_));
    for (int b = 0; b < 256; ++b) v.byte_level_token_[b] = v.find(byte_to_utf8(static_cast<uint8_t>(b)));
  }

  const int32_t n = v.n_tokens();
  read_special_id(file, "bos_token_id", n, v.bos_);
  read_special_id(file, "eos_token_id", n, v.eos_);
  read_special_id(file, "eot_token_id", n, v.eot_);
  read_special_id(file, "eom_token_id", n, v.eom_);
  read_special_id(file, "unknown_token_id", n, v.unk_);
  read_special_id(file, "seperator_token_id", n, v.sep_);  // sic: the GGUF key is misspelled
  read_special_id(file, "padding_token_id", n, v.pad_);
  read_special_id(file, "fim_pre_token_id", n, v.fim_pre_);
  read_special_id(file, "fim_suf_token_id", n, v.fim_suf_);
  read_special_id(file, "fim_mid_token_id", n, v.fim_mid_);
  read_special_id(file, "fim_pad_token_id", n, v.fim_pad_);
  read_special_id(file, "fim_rep_token_id", n, v.fim_rep_);
  read_special_id(file, "fim_sep_token_id", n, v.fim_sep_);
  read_special_id(file, "prefix_token_id", n, v.fim_pre_);  // deprecated spellings
  read_special_id(file, "suffix_token_id", n, v.fim_suf_);
  read_special_id(file, "middle_token_id", n, v.fim_mid_);
  if (const auto b = file.get_bool(key("add_bos_token"))) v.add_bos_ = *b;
  if (const auto b = file.get_bool(key("add_eos_token"))) v.add_eos_ = *b;
  // Defaults that name no token (a 512-token vocabulary has no id 11) are dropped, not kept dangling.
  for (int32_t* id : {&v.bos_, &v.eos_, &v.unk_}) {
    if (!v.is_valid(*id)) *id = kNoToken;
  }

  VocabularyBuilder::apply_special_token_rules(v);
  return v;
}

int32_t Vocabulary::find(std::string_view text) const { return text_to_id_.find(text); }

const BpeMerge* Vocabulary::find_merge(int32_t left, int32_t right) const { return merges_.find(left, right); }

const BpeMerge* Vocabulary::find_merge_text(std::string_view left, std::string_view right) const {
  if (text_merges_.empty()) return nullptr;
  const auto it = text_merges_.find(text_merge_key(left, right));
  return it == text_merges_.end() ? nullptr : &it->second;
}

int32_t Vocabulary::byte_fallback_token(uint8_t b) const {
  char hex[8];
  std::snprintf(hex, sizeof hex, "<0x%02X>", b);
  if (const int32_t id = find(hex); id != kNoToken) return id;
  return find(std::string_view(reinterpret_cast<const char*>(&b), 1));
}

}  // namespace cellserve::engine::tokenizer
