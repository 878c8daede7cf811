// Downloading a model file as `cellserve pull` does, for the commands that need one before they
// start (pull itself, and `up` with a URL or hf:// model): the cache folder and one download with
// a progress bar.
#pragma once

#include <string>

#include "base/status.h"
#include "fleet/download/downloader.h"

namespace cellserve::cli {

// `cache_dir` when not empty, else $CELLSERVE_CACHE, else $XDG_CACHE_HOME/cellserve, else
// ~/.cache/cellserve; InvalidArgument when none of them is set.
Result<std::string> model_cache_dir(const std::string& cache_dir);

// Downloads `url` (http(s):// or hf://, resolved by fleet::resolve_model_url; $HF_TOKEN sent to
// Hugging Face only) to `dest_path`, resuming a partial file and verifying `sha256` when given.
// A progress bar on stderr when `show_progress`. SIGINT or SIGTERM cancel it (the partial is kept
// for a resume): Unavailable, with `*interrupted` set.
Result<fleet::DownloadResult> pull_model(const std::string& url, const std::string& dest_path,
                                         const std::string& sha256, bool show_progress, bool* interrupted = nullptr);

}  // namespace cellserve::cli
