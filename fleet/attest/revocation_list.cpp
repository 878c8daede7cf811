#include "fleet/attest/revocation_list.h"

#include <sys/stat.h>

#include <cctype>
#include <fstream>

#include <boost/json.hpp>

namespace cellserve::fleet::attest {
namespace {

namespace json = boost::json;

Status bad_status_list(const std::string& what) { return Status::invalid_argument("attestation status list: " + what); }

// Reads `path` whole, refusing files over `limit` bytes before reading them.
Result<std::string> read_bounded(const std::string& path, size_t limit) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::not_found(path + ": cannot read the attestation status list");
  if (!S_ISREG(st.st_mode)) return Status::invalid_argument(path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > limit) {
    return Status::resource_exhausted(path + ": " + std::to_string(st.st_size) + " bytes, over the limit of " +
                                      std::to_string(limit));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": cannot open");
  std::string text;
  text.resize(static_cast<size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (static_cast<size_t>(in.gcount()) != text.size()) return Status::internal(path + ": short read");
  if (in.peek() != std::char_traits<char>::eof()) return Status::internal(path + ": grew while being read");
  return text;
}

Result<std::string> optional_string(const json::object& o, std::string_view key, const std::string& where) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return bad_status_list(where + "." + std::string(key) + " must be a string");
  return std::string(v->as_string());
}

}  // namespace

std::optional<std::string> normalize_serial(std::string_view serial_hex) {
  if (serial_hex.empty()) return std::nullopt;
  std::string out;
  for (const char c : serial_hex) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    if (out.empty() && c == '0') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out.empty() ? "0" : out;
}

Result<RevocationList> RevocationList::parse(std::string_view json_text) {
  if (json_text.size() > kMaxRevocationListBytes)
    return Status::resource_exhausted("attestation status list: too large");
  boost::system::error_code ec;
  const json::value root = json::parse(json_text, ec);
  if (ec) return bad_status_list("not JSON: " + ec.message());
  if (!root.is_object()) return bad_status_list("the top level must be an object");
  const json::value* entries = root.as_object().if_contains("entries");
  if (entries == nullptr || !entries->is_object()) return bad_status_list("\"entries\" must be an object");
  RevocationList list;
  for (const auto& [key, value] : entries->as_object()) {
    const std::string where = "entries[\"" + std::string(key.substr(0, 64)) + "\"]";
    const std::optional<std::string> serial = normalize_serial(key);
    if (!serial) return bad_status_list(where + ": the key is not a hexadecimal serial number");
    if (!value.is_object()) return bad_status_list(where + " must be an object");
    RevocationEntry entry;
    CS_ASSIGN_OR_RETURN(entry.status, optional_string(value.as_object(), "status", where));
    CS_ASSIGN_OR_RETURN(entry.reason, optional_string(value.as_object(), "reason", where));
    list.entries_[*serial] = std::move(entry);
  }
  return list;
}

Result<RevocationList> RevocationList::load(const std::string& path) {
  CS_ASSIGN_OR_RETURN(const std::string text, read_bounded(path, kMaxRevocationListBytes));
  Result<RevocationList> list = parse(text);
  if (!list.ok()) return list.status().with_context(path);
  return list;
}

const RevocationEntry* RevocationList::find(std::string_view serial_hex) const {
  const std::optional<std::string> serial = normalize_serial(serial_hex);
  if (!serial) return nullptr;
  const auto it = entries_.find(*serial);
  return it == entries_.end() ? nullptr : &it->second;
}

Result<std::shared_ptr<const RevocationList>> RevocationListFile::current() {
  std::lock_guard lock(mu_);
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    last_error_ = Status::not_found(path_ + ": cannot read the attestation status list");
    size_ = -1;  // re-read once it is back, even unchanged
  } else {
    const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    // A file that failed to parse is not parsed again until it changes.
    if (st.st_size != size_ || mtime_ns != mtime_ns_) {
      size_ = st.st_size;
      mtime_ns_ = mtime_ns;
      Result<RevocationList> fresh = RevocationList::load(path_);
      if (fresh.ok()) {
        list_ = std::make_shared<const RevocationList>(std::move(fresh).value());
        last_error_ = Status();
      } else {
        last_error_ = fresh.status();
      }
    }
  }
  if (!list_) return last_error_;
  return list_;
}

Status RevocationListFile::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

}  // namespace cellserve::fleet::attest
