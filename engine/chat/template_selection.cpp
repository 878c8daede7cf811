#include "engine/chat/template_selection.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/chat/builtin_templates.h"

namespace cellserve::engine::chat {
namespace {

constexpr std::string_view kFileOption = "--chat-template-file ";
constexpr std::string_view kNameOption = "--chat-template ";

Result<std::string> read_template_file(const std::string& path) {
  const std::string head = std::string(kFileOption) + path + ": ";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::invalid_argument(head + "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(head + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::internal(head + "read error");
  if (text.str().empty()) return Status::invalid_argument(head + "the file is empty");
  return text.str();
}

// Parses `source`; a failure keeps the parser's code and gets `context` in front.
Status parse_into(const std::string& source, const std::string& context, SelectedTemplate* out) {
  Result<ChatTemplate> parsed = ChatTemplate::parse(source);
  if (!parsed.ok()) return parsed.status().with_context(context);
  out->tmpl.emplace(std::move(parsed).value());
  out->meta.source = source;
  return {};
}

// The checks that need no file.
Status check_options(const TemplateChoice& choice) {
  if (!choice.file.empty() && !choice.name.empty()) {
    return Status::invalid_argument("give either --chat-template or --chat-template-file, not both");
  }
  if (!choice.name.empty() && !builtin_chat_template(choice.name)) {
    return Status::invalid_argument(std::string(kNameOption) + choice.name +
                                    ": no such built-in template; the built-in templates are " +
                                    builtin_chat_template_list());
  }
  return {};
}

}  // namespace

std::string_view template_origin_name(TemplateOrigin origin) {
  switch (origin) {
    case TemplateOrigin::Model:
      return "model";
    case TemplateOrigin::File:
      return "file";
    case TemplateOrigin::Builtin:
      return "builtin";
    case TemplateOrigin::Fallback:
      return "fallback";
  }
  return "model";
}

Status validate_template_choice(const TemplateChoice& choice) {
  CS_RETURN_IF_ERROR(check_options(choice));
  if (choice.file.empty()) return {};
  SelectedTemplate parsed;
  CS_ASSIGN_OR_RETURN(const std::string source, read_template_file(choice.file));
  return parse_into(source, std::string(kFileOption) + choice.file, &parsed);
}

Result<SelectedTemplate> select_chat_template(const TemplateChoice& choice, const GgufFile& model) {
  CS_RETURN_IF_ERROR(check_options(choice));
  SelectedTemplate out;
  // The model's BOS/EOS texts whatever the template: a template writes them as bos_token/eos_token.
  CS_ASSIGN_OR_RETURN(out.meta, read_gguf_chat_tokens(model));
  if (!choice.file.empty()) {
    out.origin = TemplateOrigin::File;
    out.name = choice.file;
    CS_ASSIGN_OR_RETURN(const std::string source, read_template_file(choice.file));
    CS_RETURN_IF_ERROR(parse_into(source, std::string(kFileOption) + choice.file, &out));
    return out;
  }
  std::optional<std::string> own = model.get_string("tokenizer.chat_template");
  if (!choice.name.empty() || !own) {
    out.origin = choice.name.empty() ? TemplateOrigin::Fallback : TemplateOrigin::Builtin;
    out.name = choice.name.empty() ? std::string(kFallbackTemplateName) : choice.name;
    const std::string source(*builtin_chat_template(out.name));
    // A built-in template always parses (builtin_templates_test); a failure here is a bug.
    CS_RETURN_IF_ERROR(parse_into(source, "the built-in chat template " + out.name, &out));
    return out;
  }
  out.origin = TemplateOrigin::Model;
  const Status parsed = parse_into(*own, "the model's chat template", &out);
  if (!parsed.ok()) {
    return Status(parsed.code(), parsed.message() +
                                     " (choose another with --chat-template NAME or "
                                     "--chat-template-file FILE)");
  }
  return out;
}

std::string describe_selected_template(const SelectedTemplate& selected) {
  switch (selected.origin) {
    case TemplateOrigin::Model:
      return "chat template: the model's own";
    case TemplateOrigin::File:
      return "chat template: " + selected.name + " (--chat-template-file)";
    case TemplateOrigin::Builtin:
      return "chat template: the built-in " + selected.name + " (--chat-template)";
    case TemplateOrigin::Fallback:
      return "the model has no chat template; using the built-in " + selected.name +
             " (choose another with --chat-template NAME or --chat-template-file FILE)";
  }
  return "";
}

}  // namespace cellserve::engine::chat
