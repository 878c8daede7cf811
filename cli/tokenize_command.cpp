// `cellserve tokenize -m FILE TEXT`: the token ids (and pieces) a model's tokenizer gives a text,
// exactly as llama.cpp's llama-tokenize prints them.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace cellserve::cli {
namespace {

struct TokenizeOptions {
  std::string model_path;
  std::string text;
  std::string text_file;
  bool ids_only = false;
  bool no_special = false;
  bool parse_special = true;  // llama-tokenize parses special tokens unless --no-parse-special
};

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot open text file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::internal("cannot read text file '" + path + "'");
  return ss.str();
}

// `has_text` / `has_file`: whether TEXT / --file were given (an empty TEXT is a valid text).
Status run(const TokenizeOptions& o, bool has_text, bool has_file) {
  if (has_text == has_file) {
    return Status::invalid_argument(has_text ? "give the text as an argument or with --file, not both"
                                             : "no text: give it as an argument or with --file");
  }
  std::string text = o.text;
  if (has_file) {
    CS_ASSIGN_OR_RETURN(text, read_text_file(o.text_file));
  }
  CS_ASSIGN_OR_RETURN(auto file, engine::GgufFile::open(o.model_path));
  CS_ASSIGN_OR_RETURN(auto tokenizer, engine::tokenizer::Tokenizer::from_gguf(file));
  const std::vector<int32_t> ids = tokenizer.tokenize(text, /*add_special=*/!o.no_special, o.parse_special);

  if (o.ids_only) {
    // Comma-separated, the form `cellserve run --tokens` and `cellserve logits --tokens` take.
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i == 0 ? "%d" : ",%d", ids[i]);
    std::printf("\n");
  } else {
    for (int32_t id : ids) {
      const std::string& piece = tokenizer.token_to_piece(id, /*special=*/true);
      std::printf("%6d -> '", id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::printf("'\n");
    }
  }
  return Status();
}

}  // namespace

void add_tokenize_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("tokenize", "Print the tokens a model's tokenizer gives a text (as llama-tokenize)");
  auto o = std::make_shared<TokenizeOptions>();
  cmd->add_option("-m,--model", o->model_path, "GGUF model (or vocabulary-only) file")->required();
  CLI::Option* text_opt = cmd->add_option("text", o->text, "Text to tokenize (or use --file)");
  CLI::Option* file_opt =
      cmd->add_option("-f,--file", o->text_file, "Read the text from this file (bytes as they are)");
  cmd->add_flag("--ids", o->ids_only, "Print only the ids, comma-separated (1,2,3)");
  cmd->add_flag("--no-special", o->no_special, "Do not add the BOS/EOS tokens the model asks for");
  cmd->add_flag("--parse-special,!--no-parse-special", o->parse_special,
                "Turn special-token text such as <|im_start|> into its id (default: on, as llama-tokenize)");
  cmd->callback([o, exit_code, text_opt, file_opt] {
    const Status s = run(*o, text_opt->count() > 0, file_opt->count() > 0);
    if (!s.ok()) {
      print_error("tokenize", s.message());
      *exit_code = 2;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace cellserve::cli
