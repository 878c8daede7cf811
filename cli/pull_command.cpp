// `cellserve pull URL|hf://owner/repo[@rev]/file.gguf [-o FILE] [--cache-dir DIR] [--sha256 HEX]
// [--quiet]`: downloads a model (resuming a partial download, verifying the SHA-256 when given)
// and prints its path on stdout. docs/pull.md describes the cache layout and the environment.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/model_pull.h"
#include "fleet/download/downloader.h"
#include "fleet/download/model_url.h"

namespace cellserve::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct PullOptions {
  std::string url;
  std::string output;
  std::string cache_dir;
  std::string sha256;
  bool quiet = false;
};

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

}  // namespace

// --cache-dir, else $CELLSERVE_CACHE, else $XDG_CACHE_HOME/cellserve, else ~/.cache/cellserve.
Result<std::string> model_cache_dir(const std::string& cache_dir) {
  if (!cache_dir.empty()) return cache_dir;
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : std::string();
  };
  if (std::string dir = env("CELLSERVE_CACHE"); !dir.empty()) return dir;
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/cellserve";
  if (std::string dir = env("HOME"); !dir.empty()) return dir + "/.cache/cellserve";
  return Status::invalid_argument("no cache folder: pass -o FILE or --cache-dir DIR, or set CELLSERVE_CACHE");
}

namespace {

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// Draws "  42% [=========>          ] 123.4/456.7 MiB  12.3 MiB/s" on a terminal, at most 10 times
// a second; the final draw ends the line.
class ProgressBar {
 public:
  bool update(uint64_t done, uint64_t total) {
    const auto now = Clock::now();
    if (first_) {
      first_ = false;
      start_ = now;
      start_bytes_ = done;
    }
    const bool finished = total > 0 && done == total;
    if (!finished && now - last_draw_ < std::chrono::milliseconds(100)) return g_interrupted == 0;
    last_draw_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0.2 ? mib(done - std::min(done, start_bytes_)) / seconds : 0.0;
    char line[160];
    if (total > 0) {
      const double frac = static_cast<double>(std::min(done, total)) / static_cast<double>(total);
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(frac * kWidth);
      std::string bar(kWidth, ' ');
      for (int i = 0; i < filled; ++i) bar[i] = '=';
      if (filled < kWidth) bar[filled] = '>';
      std::snprintf(line, sizeof(line), "\r%4.0f%% [%s] %.1f/%.1f MiB  %.1f MiB/s\x1b[K", frac * 100, bar.c_str(),
                    mib(done), mib(total), rate);
    } else {
      std::snprintf(line, sizeof(line), "\r%.1f MiB  %.1f MiB/s\x1b[K", mib(done), rate);
    }
    std::fputs(line, stderr);
    if (finished) std::fputc('\n', stderr);
    std::fflush(stderr);
    drawn_ = true;
    return g_interrupted == 0;
  }
  // Ends a line left unfinished (an error or a cancel after some drawing).
  void close() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

 private:
  bool first_ = true;
  bool drawn_ = false;
  Clock::time_point start_, last_draw_;
  uint64_t start_bytes_ = 0;
};

}  // namespace

Result<fleet::DownloadResult> pull_model(const std::string& url, const std::string& dest_path,
                                         const std::string& sha256, bool show_progress, bool* interrupted) {
  CS_ASSIGN_OR_RETURN(const std::string resolved, fleet::resolve_model_url(url));
  fleet::DownloadRequest request;
  request.url = resolved;
  request.sha256 = sha256;
  request.dest_path = dest_path;
  if (fleet::is_huggingface_url(url)) {
    if (const char* token = std::getenv("HF_TOKEN"); token != nullptr) request.bearer_token = token;
  }
  auto bar = std::make_shared<ProgressBar>();
  request.progress = [show_progress, bar](uint64_t done, uint64_t total) {
    return show_progress ? bar->update(done, total) : g_interrupted == 0;
  };
  g_interrupted = 0;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  auto result = fleet::download_file(request);
  bar->close();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (interrupted != nullptr) *interrupted = g_interrupted != 0;
  if (!result.ok() && g_interrupted != 0)
    return Status::unavailable("interrupted; run the same command again to resume");
  return result;
}

namespace {

int run_pull(const PullOptions& o) {
  const auto fail = [](const Status& s) {
    print_error("pull", s.message());
    return s.code() == StatusCode::DataLoss ? 2 : 1;
  };
  std::string dest = o.output;
  if (dest.empty()) {
    auto dir = model_cache_dir(o.cache_dir);
    if (!dir.ok()) return fail(dir.status());
    dest = fleet::cache_path_for(*dir, o.url);
  }
  const bool tty = !o.quiet && ::isatty(STDERR_FILENO) == 1;
  const auto start = Clock::now();
  bool interrupted = false;
  auto result = pull_model(o.url, dest, o.sha256, tty, &interrupted);
  if (!result.ok()) {
    if (interrupted) {
      print_error("pull", result.status().message());
      return 130;
    }
    return fail(result.status());
  }
  if (!o.quiet && !tty) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (result->attempts == 0) {
      std::fprintf(stderr, "cellserve pull: %s already present (sha256 %s)\n", result->path.c_str(),
                   result->sha256.c_str());
    } else {
      const double fetched = mib(result->bytes - result->resumed_from);
      std::fprintf(
          stderr, "cellserve pull: %s: %.1f MiB%s in %.1f s (%.1f MiB/s), sha256 %s%s\n", result->path.c_str(),
          mib(result->bytes),
          result->resumed_from > 0 ? (" (resumed at " + std::to_string(result->resumed_from) + ")").c_str() : "",
          seconds, seconds > 0 ? fetched / seconds : 0.0, result->sha256.c_str(),
          o.sha256.empty() ? " (not verified: no --sha256)" : " (verified)");
    }
  }
  std::printf("%s\n", result->path.c_str());
  return 0;
}

}  // namespace

void add_pull_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<PullOptions>();
  CLI::App* cmd = app.add_subcommand("pull", "Download a model file (http(s):// or hf://owner/repo[@rev]/file.gguf)");
  cmd->add_option("url", o->url, "http(s) URL or hf://owner/repo[@revision]/path/to/file.gguf")->required();
  cmd->add_option("-o,--output", o->output, "Write the model here (default: a path in the cache folder)");
  cmd->add_option("--cache-dir", o->cache_dir,
                  "Cache folder (default: $CELLSERVE_CACHE, else $XDG_CACHE_HOME/cellserve, else ~/.cache/cellserve)");
  cmd->add_option("--sha256", o->sha256, "Expected SHA-256 (hex): the file is kept only when it matches");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress or summary on stderr (errors still print)");
  cmd->callback([o, exit_code] { *exit_code = run_pull(*o); });
}

}  // namespace cellserve::cli
