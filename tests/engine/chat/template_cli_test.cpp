// `cellserve template` as a user runs it: exactly the rendered text on stdout, the template's own
// error on stderr with exit status 1, one-line usage/file errors with exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

namespace json = boost::json;
using testing::cellserve_command;
using testing::run_command;
using testing::testdata_path;

std::string temp_file(const std::string& name, const std::string& content) {
  const std::string path = (std::filesystem::temp_directory_path() / ("cs_template_cli_" + name)).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(TemplateCli, PrintsExactlyTheRenderedText) {
  const std::string tmpl =
      temp_file("basic.jinja",
                "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}[assistant]{% endif %}{{ enable_thinking }}");
  const std::string conv = temp_file("basic.json", R"({"messages": [{"role": "user", "content": "Héllo"}],
      "add_generation_prompt": true, "vars": {"enable_thinking": false}})");
  auto r = run_command(cellserve_command() + " template --template " + tmpl + " --conversation " + conv);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "<s>[user] Héllo\n[assistant]False");  // no newline added
  r = run_command(cellserve_command() + " template --template " + tmpl + " --conversation " + conv +
                  " --bos-token '[B]'");
  EXPECT_EQ(r.out, "[B][user] Héllo\n[assistant]False");
}

TEST(TemplateCli, TemplateErrorsGoToStderrWithExitOne) {
  const std::string conv = temp_file("sys.json", R"({"messages": [{"role": "system", "content": "x"}]})");
  const std::string raising =
      temp_file("raise.jinja",
                "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}");
  auto r = run_command(cellserve_command() + " template --template " + raising + " --conversation " + conv + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "cellserve template: error: System role not supported\n");
  const std::string bad = temp_file("bad.jinja", "ok\n{{ messages|groupby('role') }}");
  r = run_command(cellserve_command() + " template --template " + bad + " --conversation " + conv + " 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "cellserve template: error: line 2: unsupported filter 'groupby'\n");
}

TEST(TemplateCli, BadArgumentsAndFilesAreOneLineExitTwo) {
  const std::string tmpl = temp_file("ok.jinja", "{{ messages|length }}");
  const std::string conv = temp_file("ok.json", R"({"messages": []})");
  const std::string not_json = temp_file("notjson.json", "{messages: oops");
  const std::string no_messages = temp_file("nomsg.json", R"({"tools": []})");
  for (const std::string& args :
       {"--template /nonexistent/t.jinja --conversation " + conv,
        "--template " + tmpl + " --conversation /nonexistent/c.json",
        "--template " + tmpl + " --conversation " + not_json, "--template " + tmpl + " --conversation " + no_messages,
        "--template " + tmpl + " -m /nonexistent/m.gguf --conversation " + conv, "--conversation " + conv,
        "--template " + tmpl, "--template " + tmpl + " --conversation " + conv + " --now yesterday",
        "-m /nonexistent/m.gguf --conversation " + conv}) {
    SCOPED_TRACE(args);
    auto r = run_command(cellserve_command() + " template " + args + " 2>&1");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(lines(r.out), 1) << r.out;
    EXPECT_EQ(r.out.rfind("cellserve template: error: ", 0), 0u) << r.out;
  }
}

TEST(TemplateCli, RendersEveryReferenceCase) {
  CS_REQUIRE_TESTDATA();
  const json::value conversations = json::parse(read_file(testdata_path("templates/conversations.json")));
  const json::value expected = json::parse(read_file(testdata_path("templates/expected.json")));
  for (const json::value& c : expected.at("cases").as_array()) {
    const std::string name(c.at("template").as_string());
    const std::string conv_name(c.at("conversation").as_string());
    SCOPED_TRACE(name + " x " + conv_name);
    std::string conv_path;
    for (const json::value& v : conversations.as_array()) {
      if (v.at("name").as_string() == conv_name) conv_path = temp_file(conv_name + ".json", json::serialize(v));
    }
    const std::string command = cellserve_command() + " template --template " + testdata_path("templates/" + name) +
                                " --conversation " + conv_path + " --now 2026-01-15T09:30:00";
    if (c.at("rendered").is_null()) {
      auto r = run_command(command + " 2>&1 >/dev/null");
      EXPECT_EQ(r.exit_code, 1);
      std::string error(c.at("error").as_string());
      error = error.substr(error.find(": ") + 2);  // "TemplateError: <message>"
      EXPECT_EQ(r.out, "cellserve template: error: " + error + "\n");
    } else {
      auto r = run_command(command);
      EXPECT_EQ(r.exit_code, 0);
      EXPECT_EQ(r.out, std::string(c.at("rendered").as_string()));
    }
  }
}

TEST(TemplateCli, ModelTemplateGivesTheGoldenPrompt) {
  CS_REQUIRE_TESTDATA();
  const std::string conv =
      temp_file("golden.json", R"({"messages": [{"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "What is the capital of France? Answer in one word."}], "add_generation_prompt": true})");
  for (const std::string model : {"qwen3-tiny-f32", "qwen35-tiny-f32"}) {
    SCOPED_TRACE(model);
    auto r = run_command(cellserve_command() + " template -m " + testdata_path("models/" + model + ".gguf") +
                         " --conversation " + conv);
    EXPECT_EQ(r.exit_code, 0);
    const json::value golden = json::parse(read_file(testdata_path("golden/" + model + ".json")));
    EXPECT_EQ(r.out, std::string(golden.at("prompt_text").as_string()));
  }
  auto r = run_command(cellserve_command() + " template -m " + testdata_path("models/stories260K.gguf") +
                       " --conversation " + conv + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no tokenizer.chat_template"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cellserve
