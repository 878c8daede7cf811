// The model `cellserve up` deploys: a local GGUF file, or one downloaded first (an http(s) URL or
// hf://owner/repo/file.gguf, into `cellserve pull`'s cache), then placed in the hub's files/
// folder, which the hub serves to its agents at /files/<name>.
#pragma once

#include <string>

#include "base/status.h"

namespace cellserve::cli {

// What `up` deploys without --model: a small Qwen3.5 GGUF on Hugging Face (docs/up.md).
inline constexpr const char* kDefaultUpModel = "hf://unsloth/Qwen3.5-0.8B-GGUF/Qwen3.5-0.8B-Q4_K_M.gguf";

// The path of a local GGUF file for `model` (a path, an http(s) URL or an hf:// URL): a path is
// checked to exist and to start with the GGUF magic; a URL is downloaded (resumed, with a progress
// bar on a terminal) into the pull cache. Every error is one line that names --model.
Result<std::string> local_model_file(const std::string& model, bool is_default);

// Puts `model_path` into `files_dir` as its own file name (a hard link when the two share a file
// system, else a copy, redone when the size differs); returns that name.
Result<std::string> place_in_hub_files(const std::string& model_path, const std::string& files_dir);

// A deployment name ([a-z0-9-]{1,40}) from the model's file name: "Qwen3.5-0.8B-Q4_K_M.gguf" ->
// "qwen3-5-0-8b-q4-k-m"; "model" when nothing is left.
std::string deployment_name_for(const std::string& model_path);

}  // namespace cellserve::cli
