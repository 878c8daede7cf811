// Which template select_chat_template() picks (the model's, a file, a built-in, the chatml
// fallback), and its one-line errors, on GGUFs built in memory.
#include "engine/chat/template_selection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/chat/builtin_templates.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/support/testdata.h"

namespace cellserve::engine::chat {
namespace {

// A metadata-only GGUF: a three-token vocabulary with BOS 1 and EOS 2, and `chat_template`
// when given. The bytes must outlive the GgufFile parsed from them.
class MemoryGguf {
 public:
  explicit MemoryGguf(std::optional<std::string> chat_template, int64_t bos_id = 1) {
    GgufWriter w;
    w.set("general.architecture", GgufValue::string("llama"));
    w.set("tokenizer.ggml.tokens", GgufValue::string_array({"<unk>", "<s>", "</s>"}));
    w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<uint32_t>(bos_id)));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
    if (chat_template) w.set("tokenizer.chat_template", GgufValue::string(*chat_template));
    bytes_ = w.to_bytes();
    auto file = GgufFile::parse(bytes_);
    if (file.ok()) file_.emplace(std::move(file).value());
  }
  const GgufFile& file() const { return *file_; }
  bool ok() const { return file_.has_value(); }

 private:
  std::vector<std::byte> bytes_;
  std::optional<GgufFile> file_;
};

// A file under the temp dir with `text`, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("cellserve-template-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) + ".jinja"))
                .string();
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

std::string render(const SelectedTemplate& s, const std::string& user) {
  ChatRequest r;
  r.messages = boost::json::array{boost::json::object{{"role", "user"}, {"content", user}}};
  r.bos_token = s.meta.bos_token;
  r.eos_token = s.meta.eos_token;
  auto text = s.tmpl->apply(r);
  return text.ok() ? *text : "<error: " + text.status().message() + ">";
}

TEST(TemplateSelection, TheModelsOwnTemplateByDefault) {
  MemoryGguf gguf(std::string("{{ bos_token }}[{{ messages[0].content }}]{{ eos_token }}"));
  ASSERT_TRUE(gguf.ok());
  auto s = select_chat_template({}, gguf.file());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->origin, TemplateOrigin::Model);
  EXPECT_EQ(s->name, "");
  EXPECT_EQ(s->meta.bos_token, "<s>");
  EXPECT_EQ(s->meta.eos_token, "</s>");
  EXPECT_EQ(render(*s, "hi"), "<s>[hi]</s>");
  EXPECT_EQ(template_origin_name(s->origin), "model");
  EXPECT_EQ(describe_selected_template(*s), "chat template: the model's own");
}

TEST(TemplateSelection, AModelWithoutATemplateFallsBackToChatmlAndSaysSo) {
  MemoryGguf gguf(std::nullopt);
  ASSERT_TRUE(gguf.ok());
  auto s = select_chat_template({}, gguf.file());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->origin, TemplateOrigin::Fallback);
  EXPECT_EQ(s->name, "chatml");
  EXPECT_EQ(s->meta.source, std::string(*builtin_chat_template("chatml")));
  EXPECT_EQ(s->meta.bos_token, "<s>");  // the model's token texts all the same
  EXPECT_EQ(render(*s, "hi"), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(template_origin_name(s->origin), "fallback");
  const std::string line = describe_selected_template(*s);
  EXPECT_NE(line.find("no chat template"), std::string::npos) << line;
  EXPECT_NE(line.find("chatml"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(TemplateSelection, ABuiltinByNameReplacesTheModelsTemplate) {
  MemoryGguf gguf(std::string("{{ messages[0].content }}"));
  auto s = select_chat_template({.file = "", .name = "llama3"}, gguf.file());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->origin, TemplateOrigin::Builtin);
  EXPECT_EQ(s->name, "llama3");
  EXPECT_EQ(
      render(*s, "hi"),
      "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(template_origin_name(s->origin), "builtin");
}

TEST(TemplateSelection, AFileReplacesTheModelsTemplate) {
  TempFile f("<<{{ messages[0].content | upper }}>>");
  MemoryGguf gguf(std::string("{{ messages[0].content }}"));
  auto s = select_chat_template({.file = f.path(), .name = ""}, gguf.file());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->origin, TemplateOrigin::File);
  EXPECT_EQ(s->name, f.path());
  EXPECT_EQ(s->meta.source, "<<{{ messages[0].content | upper }}>>");
  EXPECT_EQ(render(*s, "hi"), "<<HI>>");
  EXPECT_NE(describe_selected_template(*s).find(f.path()), std::string::npos);
}

TEST(TemplateSelection, FileErrorsNameTheFileAndTheProblem) {
  MemoryGguf gguf(std::nullopt);
  TempFile broken("line one\n{% for m in messages %}{{ m.content }}\n");
  auto s = select_chat_template({.file = broken.path(), .name = ""}, gguf.file());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::InvalidArgument);
  const std::string m = s.status().message();
  EXPECT_EQ(m.rfind("--chat-template-file " + broken.path() + ": line ", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  // The same error before any model is loaded (serve checks its options before it listens).
  EXPECT_EQ(validate_template_choice({.file = broken.path(), .name = ""}).message(), m);
  EXPECT_TRUE(validate_template_choice({.file = "", .name = "qwen3"}).ok());

  TempFile unsupported("{{ messages | groupby('role') }}");
  s = select_chat_template({.file = unsupported.path(), .name = ""}, gguf.file());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(s.status().message().find("groupby"), std::string::npos) << s.status().message();

  s = select_chat_template({.file = "/nonexistent/t.jinja", .name = ""}, gguf.file());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "--chat-template-file /nonexistent/t.jinja: No such file or directory");

  TempFile empty("");
  s = select_chat_template({.file = empty.path(), .name = ""}, gguf.file());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "--chat-template-file " + empty.path() + ": the file is empty");

  const std::string dir = std::filesystem::temp_directory_path().string();
  s = select_chat_template({.file = dir, .name = ""}, gguf.file());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "--chat-template-file " + dir + ": is a directory");
}

TEST(TemplateSelection, AnUnknownNameListsTheBuiltins) {
  const Status s = validate_template_choice({.file = "", .name = "vicuna"});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(
      s.message(),
      "--chat-template vicuna: no such built-in template; the built-in templates are chatml, llama3, mistral, qwen3");
  MemoryGguf gguf(std::nullopt);
  auto selected = select_chat_template({.file = "", .name = "vicuna"}, gguf.file());
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().message(), s.message());
  for (std::string_view name : builtin_chat_template_names()) {
    EXPECT_TRUE(validate_template_choice({.file = "", .name = std::string(name)}).ok()) << name;
  }
  EXPECT_TRUE(validate_template_choice({}).ok());
}

TEST(TemplateSelection, FileAndNameTogetherAreRefused) {
  const Status s = validate_template_choice({.file = "t.jinja", .name = "chatml"});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "give either --chat-template or --chat-template-file, not both");
}

TEST(TemplateSelection, ABrokenModelTemplateFailsUnlessReplaced) {
  MemoryGguf gguf(std::string("{% if %}"));
  auto s = select_chat_template({}, gguf.file());
  ASSERT_FALSE(s.ok());
  const std::string m = s.status().message();
  EXPECT_EQ(m.rfind("the model's chat template: line 1: ", 0), 0u) << m;
  EXPECT_NE(m.find("--chat-template NAME or --chat-template-file FILE"), std::string::npos) << m;
  // Choosing another template serves the model anyway.
  auto replaced = select_chat_template({.file = "", .name = "chatml"}, gguf.file());
  ASSERT_TRUE(replaced.ok()) << replaced.status().to_string();
  EXPECT_EQ(replaced->origin, TemplateOrigin::Builtin);
}

TEST(TemplateSelection, ABrokenBosIdIsDataLossWhateverTheTemplate) {
  MemoryGguf gguf(std::nullopt, /*bos_id=*/7);
  ASSERT_TRUE(gguf.ok());
  auto s = select_chat_template({.file = "", .name = "chatml"}, gguf.file());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::DataLoss);
}

TEST(TemplateSelection, Stories260KHasNoTemplateAndGetsChatml) {
  CS_REQUIRE_TESTDATA();
  auto file = GgufFile::open(cellserve::testing::testdata_path("models/stories260K.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto s = select_chat_template({}, *file);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->origin, TemplateOrigin::Fallback);
  EXPECT_EQ(s->meta.bos_token, "<s>");
  EXPECT_EQ(s->meta.eos_token, "</s>");
}

}  // namespace
}  // namespace cellserve::engine::chat
