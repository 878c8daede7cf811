#include "cli/key_file.h"

#include <fstream>

namespace cellserve::cli {

Result<std::string> read_key_file(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::invalid_argument(flag + " " + path + ": cannot read the file");
  std::string key;
  std::getline(in, key);
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; };
  while (!key.empty() && blank(key.back())) key.pop_back();
  size_t start = 0;
  while (start < key.size() && blank(key[start])) ++start;
  key.erase(0, start);
  if (key.empty()) return Status::invalid_argument(flag + " " + path + ": the first line is empty");
  return key;
}

}  // namespace cellserve::cli
