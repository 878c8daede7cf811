// `cellserve template (-m MODEL.gguf | --template FILE.jinja) --conversation FILE.json`: renders one
// conversation with a chat template and prints exactly the prompt text (no newline added).
//
// The conversation file holds one object in the format of shared/testdata/templates/
// conversations.json: "messages", optional "tools", optional "add_generation_prompt" (default
// true) and optional "vars" (extra template variables such as enable_thinking). bos_token and
// eos_token are the model's token texts with -m, "<s>" and "</s>" with --template (the values
// Hugging Face's reference renderings use); --bos-token/--eos-token override both.
//
// Exit status: 0 rendered; 1 the template failed to parse or raised while rendering (its message
// on stderr); 2 bad arguments or unreadable/invalid files.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/gguf_chat_template.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;
using engine::chat::ChatRequest;
using engine::chat::ChatTemplate;
using engine::chat::RenderOptions;

struct TemplateOptions {
  std::string model_path;
  std::string template_path;
  std::string conversation_path;
  std::string now;
  std::string bos_token;
  std::string eos_token;
  bool bos_given = false;
  bool eos_given = false;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::internal(path + ": read error");
  return ss.str();
}

// "YYYY-MM-DDTHH:MM:SS" (or with a space) as a local time for strftime_now().
Result<std::tm> parse_time(const std::string& text) {
  std::tm t{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char sep = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d", &year, &month, &day, &sep, &hour, &minute, &second) != 7 ||
      (sep != 'T' && sep != ' ') || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
      second > 60) {
    return Status::invalid_argument("--now: expected YYYY-MM-DDTHH:MM:SS, got '" + text + "'");
  }
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  const std::time_t as_utc = timegm(&t);  // fills tm_wday and tm_yday
  gmtime_r(&as_utc, &t);
  return t;
}

Result<ChatRequest> read_conversation(const std::string& path) {
  CS_ASSIGN_OR_RETURN(std::string text, read_text(path));
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) return Status::invalid_argument(path + ": invalid JSON: " + ec.message());
  if (!doc.is_object()) return Status::invalid_argument(path + ": expected a JSON object");
  const json::object& conv = doc.as_object();
  ChatRequest request;
  const json::value* messages = conv.if_contains("messages");
  if (messages == nullptr || !messages->is_array())
    return Status::invalid_argument(path + ": \"messages\" must be an array");
  request.messages = messages->as_array();
  if (const json::value* tools = conv.if_contains("tools"); tools != nullptr && !tools->is_null()) {
    if (!tools->is_array()) return Status::invalid_argument(path + ": \"tools\" must be an array");
    request.tools = tools->as_array();
  }
  if (const json::value* agp = conv.if_contains("add_generation_prompt")) {
    if (!agp->is_bool()) return Status::invalid_argument(path + ": \"add_generation_prompt\" must be true or false");
    request.add_generation_prompt = agp->as_bool();
  }
  if (const json::value* vars = conv.if_contains("vars")) {
    if (!vars->is_object()) return Status::invalid_argument(path + ": \"vars\" must be an object");
    request.extra_vars = vars->as_object();
  }
  return request;
}

// Returns the process exit status.
int run(const TemplateOptions& o) {
  if (o.model_path.empty() == o.template_path.empty()) {
    print_error("template", "give exactly one of -m MODEL.gguf and --template FILE.jinja");
    return 2;
  }
  if (o.conversation_path.empty()) {
    print_error("template", "--conversation FILE.json is required");
    return 2;
  }
  std::string source;
  std::string bos = "<s>";
  std::string eos = "</s>";
  if (!o.model_path.empty()) {
    auto file = engine::GgufFile::open(o.model_path);
    if (!file.ok()) {
      print_error("template", file.status().message());
      return 2;
    }
    auto info = engine::chat::read_gguf_chat_template(*file);
    if (!info.ok()) {
      print_error("template", o.model_path + ": " + info.status().message());
      return 2;
    }
    source = std::move(info->source);
    bos = std::move(info->bos_token);
    eos = std::move(info->eos_token);
  } else {
    auto text = read_text(o.template_path);
    if (!text.ok()) {
      print_error("template", text.status().message());
      return 2;
    }
    source = std::move(*text);
  }
  auto request = read_conversation(o.conversation_path);
  if (!request.ok()) {
    print_error("template", request.status().message());
    return 2;
  }
  request->bos_token = o.bos_given ? o.bos_token : bos;
  request->eos_token = o.eos_given ? o.eos_token : eos;
  RenderOptions options;
  if (!o.now.empty()) {
    auto now = parse_time(o.now);
    if (!now.ok()) {
      print_error("template", now.status().message());
      return 2;
    }
    options.now = *now;
  }
  auto tmpl = ChatTemplate::parse(source);
  if (!tmpl.ok()) {
    print_error("template", tmpl.status().message());
    return 1;
  }
  auto prompt = tmpl->apply(*request, options);
  if (!prompt.ok()) {
    print_error("template", prompt.status().message());
    return 1;
  }
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_template_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("template", "Render a conversation with a chat template and print the prompt text");
  auto o = std::make_shared<TemplateOptions>();
  // Presence is checked in run() so that every argument error is one line with exit status 2.
  cmd->add_option("-m,--model", o->model_path, "GGUF model whose tokenizer.chat_template to use");
  cmd->add_option("--template", o->template_path, "Jinja chat template file to use instead of a model's");
  cmd->add_option("--conversation", o->conversation_path, "JSON file with one conversation object (required)");
  cmd->add_option("--now", o->now, "Local time strftime_now() sees, YYYY-MM-DDTHH:MM:SS (default: the current time)");
  cmd->add_option("--bos-token", o->bos_token, "bos_token text (default: the model's, or <s> with --template)");
  cmd->add_option("--eos-token", o->eos_token, "eos_token text (default: the model's, or </s> with --template)");
  cmd->callback([o, cmd, exit_code] {
    o->bos_given = cmd->count("--bos-token") > 0;
    o->eos_given = cmd->count("--eos-token") > 0;
    *exit_code = run(*o);
  });
}

}  // namespace cellserve::cli
