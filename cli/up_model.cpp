#include "cli/up_model.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/model_pull.h"
#include "fleet/download/model_url.h"

namespace cellserve::cli {
namespace {

namespace fs = std::filesystem;

bool is_url(const std::string& model) {
  return model.starts_with("http://") || model.starts_with("https://") || model.starts_with("hf://");
}

Status check_gguf(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::not_found("--model " + path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, sizeof(magic)) || std::string(magic, 4) != "GGUF") {
    return Status::invalid_argument("--model " + path + ": not a GGUF file (it does not start with \"GGUF\")");
  }
  return {};
}

Result<std::string> download_model(const std::string& url, bool is_default) {
  const std::string what = is_default ? "the default model " + url + " (no --model given)" : "--model " + url;
  auto cache = model_cache_dir("");
  if (!cache.ok()) return Status::invalid_argument(what + ": " + cache.status().message());
  std::fprintf(stderr, "cellserve up: downloading %s\n", what.c_str());
  auto pulled = pull_model(url, fleet::cache_path_for(*cache, url), "", ::isatty(STDERR_FILENO) == 1);
  if (!pulled.ok()) {
    return Status(pulled.status().code(), "cannot download " + what + ": " + pulled.status().message() +
                                              "; pass --model PATH to a local .gguf file");
  }
  return pulled->path;
}

}  // namespace

Result<std::string> local_model_file(const std::string& model, bool is_default) {
  std::string path = model;
  if (is_url(model)) {
    CS_ASSIGN_OR_RETURN(path, download_model(model, is_default));
  }
  CS_RETURN_IF_ERROR(check_gguf(path));
  return fs::absolute(path).string();
}

Result<std::string> place_in_hub_files(const std::string& model_path, const std::string& files_dir) {
  const std::string name = fs::path(model_path).filename().string();
  const fs::path dest = fs::path(files_dir) / name;
  std::error_code ec;
  const uintmax_t size = fs::file_size(model_path, ec);
  if (ec) return Status::internal(model_path + ": " + ec.message());
  if (fs::exists(dest, ec) && fs::equivalent(dest, model_path, ec)) return name;
  if (fs::exists(dest, ec) && fs::file_size(dest, ec) == size && !ec) return name;  // an earlier run's copy
  fs::remove(dest, ec);
  fs::create_hard_link(model_path, dest, ec);
  if (!ec) return name;
  fs::copy_file(model_path, dest, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::internal("cannot put " + model_path + " into " + files_dir + ": " + ec.message());
  return name;
}

std::string deployment_name_for(const std::string& model_path) {
  const std::string stem = fs::path(model_path).stem().string();
  std::string name;
  for (const char ch : stem) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (keep) {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  if (name.size() > 40) name.resize(40);
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name.empty() ? "model" : name;
}

}  // namespace cellserve::cli
