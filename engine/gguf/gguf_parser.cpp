// Parsing and validation of GGUF images. Every read goes through ByteCursor, which checks the
// remaining length first, so a malformed file can only produce an error, never an out-of-bounds
// read or an allocation larger than the file could justify.
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

#include "engine/gguf/gguf_file.h"

namespace cellserve::engine {
namespace {

// Arrays may nest, but no real file nests deeper than 2; the bound keeps recursion finite.
constexpr int kMaxArrayDepth = 16;

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  template <typename T>
  Status read(T* out, const char* what) {
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }

  Status read_string(std::string* out, const char* what) {
    uint64_t len = 0;
    const uint64_t at = pos_;
    CS_RETURN_IF_ERROR(read(&len, what));
    if (len > remaining()) {
      return Status::data_loss(std::string(what) + " at offset " + std::to_string(at) + ": string length " +
                               std::to_string(len) + " runs past the end of the file (" + std::to_string(remaining()) +
                               " bytes left)");
    }
    out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return {};
  }

  Status truncated(const char* what, uint64_t need) const {
    return Status::data_loss(std::string("truncated file: ") + what + " at offset " + std::to_string(pos_) + " needs " +
                             std::to_string(need) + " bytes, " + std::to_string(remaining()) + " left");
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
};

// Smallest encoded size of one value of `type`; used to reject array counts the remaining
// bytes cannot possibly hold before allocating anything.
uint64_t min_encoded_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::UInt8:
    case GgufValueType::Int8:
    case GgufValueType::Bool:
      return 1;
    case GgufValueType::UInt16:
    case GgufValueType::Int16:
      return 2;
    case GgufValueType::UInt32:
    case GgufValueType::Int32:
    case GgufValueType::Float32:
      return 4;
    case GgufValueType::String:
    case GgufValueType::UInt64:
    case GgufValueType::Int64:
    case GgufValueType::Float64:
      return 8;
    case GgufValueType::Array:
      return 12;  // element type + count
  }
  return 1;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::Float64); }

Status read_value(ByteCursor& in, GgufValueType type, int depth, GgufValue* out);

template <typename T>
Status read_scalar(ByteCursor& in, GgufValue* out, const char* what) {
  T v{};
  CS_RETURN_IF_ERROR(in.read(&v, what));
  *out = GgufValue(GgufValue::Storage(v));
  return {};
}

Status read_array(ByteCursor& in, int depth, GgufValue* out) {
  if (depth >= kMaxArrayDepth) {
    return Status::data_loss("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " at offset " +
                             std::to_string(in.offset()));
  }
  const uint64_t at = in.offset();
  uint32_t raw_type = 0;
  uint64_t count = 0;
  CS_RETURN_IF_ERROR(in.read(&raw_type, "array element type"));
  if (!valid_value_type(raw_type)) {
    return Status::data_loss("array at offset " + std::to_string(at) + " has unknown element type " +
                             std::to_string(raw_type));
  }
  CS_RETURN_IF_ERROR(in.read(&count, "array length"));
  const auto elem_type = static_cast<GgufValueType>(raw_type);
  if (count > in.remaining() / min_encoded_size(elem_type)) {
    return Status::data_loss("array at offset " + std::to_string(at) + ": length " + std::to_string(count) +
                             " runs past the end of the file");
  }
  GgufArray array{elem_type, {}};
  array.items.resize(static_cast<size_t>(count));
  for (auto& item : array.items) CS_RETURN_IF_ERROR(read_value(in, elem_type, depth + 1, &item));
  *out = GgufValue::array(std::move(array));
  return {};
}

Status read_value(ByteCursor& in, GgufValueType type, int depth, GgufValue* out) {
  switch (type) {
    case GgufValueType::UInt8:
      return read_scalar<uint8_t>(in, out, "u8 value");
    case GgufValueType::Int8:
      return read_scalar<int8_t>(in, out, "i8 value");
    case GgufValueType::UInt16:
      return read_scalar<uint16_t>(in, out, "u16 value");
    case GgufValueType::Int16:
      return read_scalar<int16_t>(in, out, "i16 value");
    case GgufValueType::UInt32:
      return read_scalar<uint32_t>(in, out, "u32 value");
    case GgufValueType::Int32:
      return read_scalar<int32_t>(in, out, "i32 value");
    case GgufValueType::Float32:
      return read_scalar<float>(in, out, "f32 value");
    case GgufValueType::UInt64:
      return read_scalar<uint64_t>(in, out, "u64 value");
    case GgufValueType::Int64:
      return read_scalar<int64_t>(in, out, "i64 value");
    case GgufValueType::Float64:
      return read_scalar<double>(in, out, "f64 value");
    case GgufValueType::Bool: {
      uint8_t b = 0;
      const uint64_t at = in.offset();
      CS_RETURN_IF_ERROR(in.read(&b, "bool value"));
      if (b > 1) return Status::data_loss("bool at offset " + std::to_string(at) + " is " + std::to_string(b));
      *out = GgufValue::boolean(b != 0);
      return {};
    }
    case GgufValueType::String: {
      std::string s;
      CS_RETURN_IF_ERROR(in.read_string(&s, "string value"));
      *out = GgufValue::string(std::move(s));
      return {};
    }
    case GgufValueType::Array:
      return read_array(in, depth, out);
  }
  return Status::data_loss("unknown value type");
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

// Friend of GgufFile: fills it field by field.
class GgufParser {
 public:
  static Result<GgufFile> parse(std::span<const std::byte> bytes);

 private:
  static Status parse_header(ByteCursor& in, GgufFile& f, uint64_t* n_tensors, uint64_t* n_kv);
  static Status parse_metadata(ByteCursor& in, GgufFile& f, uint64_t n_kv);
  static Status parse_tensor_info(ByteCursor& in, GgufTensorInfo* t);
  static Status place_tensors(GgufFile& f);
};

Status GgufParser::parse_header(ByteCursor& in, GgufFile& f, uint64_t* n_tensors, uint64_t* n_kv) {
  uint32_t magic = 0;
  CS_RETURN_IF_ERROR(in.read(&magic, "magic"));
  if (magic != kGgufMagic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "bad magic 0x%08x: not a GGUF file", magic);
    return Status::data_loss(buf);
  }
  CS_RETURN_IF_ERROR(in.read(&f.version_, "version"));
  if (f.version_ != 2 && f.version_ != 3) {
    if (f.version_ == 1) return Status::unimplemented("GGUF version 1 is not supported (versions 2 and 3 are)");
    if ((f.version_ & 0xffff) == 0 && (__builtin_bswap32(f.version_) == 2 || __builtin_bswap32(f.version_) == 3)) {
      return Status::unimplemented("big-endian GGUF files are not supported");
    }
    return Status::unimplemented("unsupported GGUF version " + std::to_string(f.version_) +
                                 " (versions 2 and 3 are supported)");
  }
  CS_RETURN_IF_ERROR(in.read(n_tensors, "tensor count"));
  CS_RETURN_IF_ERROR(in.read(n_kv, "metadata count"));
  // Each tensor info takes at least 8 (name) + 4 (n_dims) + 4 (type) + 8 (offset) bytes and
  // each key-value at least 8 + 4 + 1.
  if (*n_tensors > in.remaining() / 24) {
    return Status::data_loss("tensor count " + std::to_string(*n_tensors) + " is larger than the file can hold");
  }
  if (*n_kv > in.remaining() / 13) {
    return Status::data_loss("metadata count " + std::to_string(*n_kv) + " is larger than the file can hold");
  }
  return {};
}

Status GgufParser::parse_metadata(ByteCursor& in, GgufFile& f, uint64_t n_kv) {
  f.metadata_.resize(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    GgufKeyValue& kv = f.metadata_[static_cast<size_t>(i)];
    const uint64_t at = in.offset();
    CS_RETURN_IF_ERROR(in.read_string(&kv.key, "metadata key"));
    uint32_t raw_type = 0;
    CS_RETURN_IF_ERROR(in.read(&raw_type, "metadata value type"));
    if (!valid_value_type(raw_type)) {
      return Status::data_loss("metadata key '" + kv.key + "' at offset " + std::to_string(at) +
                               " has unknown value type " + std::to_string(raw_type));
    }
    Status s = read_value(in, static_cast<GgufValueType>(raw_type), 0, &kv.value);
    if (!s.ok()) return s.with_context("metadata key '" + kv.key + "'");
    if (!f.metadata_index_.emplace(kv.key, static_cast<size_t>(i)).second) {
      return Status::data_loss("duplicate metadata key '" + kv.key + "' at offset " + std::to_string(at));
    }
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    const auto* v = std::get_if<uint32_t>(&a->storage());
    if (v == nullptr) {
      return Status::data_loss(std::string("general.alignment must be a u32, found ") +
                               gguf_value_type_name(a->type()));
    }
    if (*v == 0 || (*v & (*v - 1)) != 0) {
      return Status::data_loss("general.alignment " + std::to_string(*v) + " is not a power of two");
    }
    f.alignment_ = *v;
  }
  return {};
}

Status GgufParser::parse_tensor_info(ByteCursor& in, GgufTensorInfo* t) {
  const uint64_t at = in.offset();
  CS_RETURN_IF_ERROR(in.read_string(&t->name, "tensor name"));
  auto where = [&] { return "tensor '" + t->name + "' (info at offset " + std::to_string(at) + ")"; };
  uint32_t n_dims = 0;
  CS_RETURN_IF_ERROR(in.read(&n_dims, "tensor dimension count"));
  if (n_dims > Shape::kMaxDims) {
    return Status::data_loss(where() + ": " + std::to_string(n_dims) + " dimensions, at most " +
                             std::to_string(Shape::kMaxDims) + " are allowed");
  }
  t->shape.n_dims = static_cast<int>(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne = 0;
    CS_RETURN_IF_ERROR(in.read(&ne, "tensor dimension"));
    if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status::data_loss(where() + ": dimension " + std::to_string(d) + " = " + std::to_string(ne) +
                               " overflows");
    }
    t->shape.ne[d] = static_cast<int64_t>(ne);
  }
  uint32_t raw_type = 0;
  CS_RETURN_IF_ERROR(in.read(&raw_type, "tensor type"));
  const auto type = ggml_type_from_u32(raw_type);
  if (!type) return Status::data_loss(where() + ": unknown tensor type " + std::to_string(raw_type));
  t->type = *type;
  CS_RETURN_IF_ERROR(in.read(&t->offset, "tensor data offset"));

  // Element count and byte size, with overflow checks at every multiplication.
  const int64_t block = ggml_block_size(t->type);
  if (t->shape.ne[0] % block != 0) {
    return Status::data_loss(where() + ": row length " + std::to_string(t->shape.ne[0]) + " is not a multiple of the " +
                             std::string(ggml_type_name(t->type)) + " block size " + std::to_string(block));
  }
  uint64_t bytes = static_cast<uint64_t>(t->shape.ne[0] / block) * ggml_type_size(t->type);
  for (int d = 1; d < Shape::kMaxDims; ++d) {
    const auto ne = static_cast<uint64_t>(t->shape.ne[static_cast<size_t>(d)]);
    if (ne != 0 && bytes > std::numeric_limits<uint64_t>::max() / ne) {
      return Status::data_loss(where() + ": shape " + t->shape.to_string() + " overflows the byte size");
    }
    bytes *= ne;
  }
  const int64_t max = std::numeric_limits<int64_t>::max();
  int64_t elems = 1;
  for (int64_t ne : t->shape.ne) {
    if (ne != 0 && elems > max / ne) {
      return Status::data_loss(where() + ": shape " + t->shape.to_string() + " overflows the element count");
    }
    elems *= ne;
  }
  t->size_bytes = bytes;
  return {};
}

Status GgufParser::place_tensors(GgufFile& f) {
  const uint64_t data_size = f.bytes_.size() - f.data_offset_;
  for (const GgufTensorInfo& t : f.tensors_) {
    if (t.offset % f.alignment_ != 0) {
      return Status::data_loss("tensor '" + t.name + "': data offset " + std::to_string(t.offset) +
                               " is not aligned to " + std::to_string(f.alignment_) + " bytes");
    }
    if (t.offset > data_size || t.size_bytes > data_size - t.offset) {
      return Status::data_loss("tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" +
                               std::to_string(t.size_bytes) + ") lies outside the data section (" +
                               std::to_string(data_size) + " bytes); the file may be truncated");
    }
  }
  return {};
}

Result<GgufFile> GgufParser::parse(std::span<const std::byte> bytes) {
  GgufFile f;
  f.bytes_ = bytes;
  ByteCursor in(bytes);
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  CS_RETURN_IF_ERROR(parse_header(in, f, &n_tensors, &n_kv));
  CS_RETURN_IF_ERROR(parse_metadata(in, f, n_kv));

  f.tensors_.resize(static_cast<size_t>(n_tensors));
  for (size_t i = 0; i < f.tensors_.size(); ++i) {
    CS_RETURN_IF_ERROR(parse_tensor_info(in, &f.tensors_[i]));
    if (!f.tensor_index_.emplace(f.tensors_[i].name, i).second) {
      return Status::data_loss("duplicate tensor name '" + f.tensors_[i].name + "'");
    }
  }

  // The data section starts at the next multiple of the alignment. A file without tensors may
  // end right after its header.
  f.data_offset_ = align_up(in.offset(), f.alignment_);
  if (f.data_offset_ > bytes.size()) {
    if (!f.tensors_.empty()) {
      return Status::data_loss("truncated file: the data section would start at offset " +
                               std::to_string(f.data_offset_) + " but the file has " + std::to_string(bytes.size()) +
                               " bytes");
    }
    f.data_offset_ = bytes.size();
  }
  CS_RETURN_IF_ERROR(place_tensors(f));
  return f;
}

Result<GgufFile> GgufFile::parse(std::span<const std::byte> bytes) { return GgufParser::parse(bytes); }

Result<GgufFile> GgufFile::open(const std::string& path) {
  CS_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path));
  auto parsed = GgufParser::parse(mapping.bytes());
  if (!parsed.ok()) return parsed.status().with_context(path);
  GgufFile f = std::move(parsed).value();
  f.mapping_ = std::move(mapping);  // the span stays valid: moving a mapping keeps its address
  return f;
}

}  // namespace cellserve::engine
