// read_multipart over body files as real clients write them (curl -F, the openai npm client),
// delimiters straddling the reader's pieces, every refusal, and truncated or mangled bodies.
#include "net/multipart.h"

#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "net/header_params.h"
#include "tests/net/temp_dir.h"

namespace cellserve::net {
namespace {

using cellserve::net::testing::read_file;
using cellserve::net::testing::TempDir;
using cellserve::net::testing::write_file;

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A body file and a destination in a fresh directory.
class MultipartTest : public ::testing::Test {
 protected:
  Result<MultipartForm> parse(const std::string& body, std::string_view content_type, uint64_t max_file = 1 << 20,
                              const MultipartLimits& limits = {}) {
    write_file(body_path(), body);
    return read_multipart(body_path(), content_type, dest_path(), max_file, limits);
  }
  std::string body_path() const { return dir_.file("body"); }
  std::string dest_path() const { return dir_.file("upload"); }

  // Parses `body`, expecting InvalidArgument whose message holds `words`, and no destination file.
  void expect_refused(const std::string& body, std::string_view content_type, const std::string& words,
                      uint64_t max_file = 1 << 20, const MultipartLimits& limits = {}) {
    auto form = parse(body, content_type, max_file, limits);
    ASSERT_FALSE(form.ok()) << "accepted: " << body;
    EXPECT_EQ(form.status().code(), StatusCode::InvalidArgument) << form.status().to_string();
    EXPECT_NE(form.status().message().find(words), std::string::npos) << form.status().to_string();
    EXPECT_FALSE(exists(dest_path())) << form.status().to_string();
  }

  TempDir dir_;
};

constexpr std::string_view kCurlType = "multipart/form-data; boundary=------------------------d74496d66958873e";

// `curl -F purpose=fine-tune -F file=@train.jsonl http://.../v1/files`.
const std::string kCurlBody =
    "--------------------------d74496d66958873e\r\n"
    "Content-Disposition: form-data; name=\"purpose\"\r\n"
    "\r\n"
    "fine-tune\r\n"
    "--------------------------d74496d66958873e\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"train.jsonl\"\r\n"
    "Content-Type: application/octet-stream\r\n"
    "\r\n"
    "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n\r\n"
    "--------------------------d74496d66958873e--\r\n";

TEST_F(MultipartTest, ReadsWhatCurlSends) {
  auto form = parse(kCurlBody, kCurlType);
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  EXPECT_EQ(form->fields.size(), 1u);
  EXPECT_EQ(form->fields["purpose"], "fine-tune");
  ASSERT_TRUE(form->file);
  EXPECT_EQ(form->file->field, "file");
  EXPECT_EQ(form->file->filename, "train.jsonl");
  EXPECT_EQ(form->file->content_type, "application/octet-stream");
  EXPECT_EQ(form->file->bytes, 32u);
  EXPECT_EQ(read_file(dest_path()), "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
  struct stat st {};
  ASSERT_EQ(::stat(dest_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(MultipartTest, ReadsWhatTheOpenAiNodeClientSends) {
  // openai-node on Node 18+ posts a FormData through undici (file first, then purpose).
  const std::string undici =
      "------formdata-undici-071937253429\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"mydata.jsonl\"\r\n"
      "Content-Type: application/octet-stream\r\n"
      "\r\n"
      "{\"messages\": []}\n\r\n"
      "------formdata-undici-071937253429\r\n"
      "Content-Disposition: form-data; name=\"purpose\"\r\n"
      "\r\n"
      "batch\r\n"
      "------formdata-undici-071937253429--\r\n";
  auto form = parse(undici, "multipart/form-data; boundary=----formdata-undici-071937253429");
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  EXPECT_EQ(form->fields["purpose"], "batch");
  ASSERT_TRUE(form->file);
  EXPECT_EQ(form->file->filename, "mydata.jsonl");
  EXPECT_EQ(read_file(dest_path()), "{\"messages\": []}\n");
  ASSERT_EQ(::unlink(dest_path().c_str()), 0);

  // Its older transport, form-data-encoder, ends with an extra CRLF after the close delimiter.
  const std::string encoder =
      "--form-data-boundary-k9ax1czhfd4bs2p7\r\n"
      "Content-Disposition: form-data; name=\"purpose\"\r\n"
      "\r\n"
      "assistants\r\n"
      "--form-data-boundary-k9ax1czhfd4bs2p7\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\n"
      "Content-Type: text/plain\r\n"
      "\r\n"
      "hello\r\n"
      "--form-data-boundary-k9ax1czhfd4bs2p7--\r\n\r\n";
  form = parse(encoder, "multipart/form-data; boundary=form-data-boundary-k9ax1czhfd4bs2p7");
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  EXPECT_EQ(form->fields["purpose"], "assistants");
  ASSERT_TRUE(form->file);
  EXPECT_EQ(form->file->content_type, "text/plain");
  EXPECT_EQ(read_file(dest_path()), "hello");
}

TEST_F(MultipartTest, QuotedBoundaryPreambleAndEpilogue) {
  // After RFC 2046 5.1.1's example: a quoted boundary with a space, a preamble and an epilogue.
  const std::string body =
      "This is the preamble.  It is to be ignored.\r\n"
      "--simple boundary\r\n"
      "Content-Disposition: form-data; name=a\r\n"
      "\r\n"
      "This is implicitly typed plain US-ASCII text.\r\n"
      "It does NOT end with a linebreak.\r\n"
      "--simple boundary \t\r\n"  // transport padding
      "content-disposition: FORM-DATA; NAME=\"b\"\r\n"
      "X-Ignored: yes\r\n"
      "\r\n"
      "\r\n"
      "--simple boundary--\r\n"
      "This is the epilogue.  It is also to be ignored.\r\n";
  auto form = parse(body, "Multipart/Form-Data; charset=utf-8; boundary=\"simple boundary\"");
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  EXPECT_EQ(form->fields["a"], "This is implicitly typed plain US-ASCII text.\r\nIt does NOT end with a linebreak.");
  EXPECT_EQ(form->fields["b"], "");
  EXPECT_FALSE(form->file);
  EXPECT_FALSE(exists(dest_path()));  // no file part: no file
}

TEST_F(MultipartTest, UnescapesQuotedFilenames) {
  const std::string body =
      "--b\r\n"
      "Content-Disposition: form-data; name=\"the file\"; filename=\"a \\\"quoted\\\" \\\\ "
      "r\xc3\xa9sum\xc3\xa9.txt\"\r\n"
      "\r\n"
      "x\r\n"
      "--b--";
  auto form = parse(body, "multipart/form-data; boundary=b");
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  ASSERT_TRUE(form->file);
  EXPECT_EQ(form->file->field, "the file");
  EXPECT_EQ(form->file->filename, "a \"quoted\" \\ r\xc3\xa9sum\xc3\xa9.txt");
  EXPECT_EQ(form->file->content_type, "");
}

TEST_F(MultipartTest, EmptyFilePartAndEmptyFilename) {
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\"\r\n"
      "Content-Type: application/octet-stream\r\n\r\n\r\n--b--\r\n";
  auto form = parse(body, "multipart/form-data; boundary=b");
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  ASSERT_TRUE(form->file);
  EXPECT_EQ(form->file->filename, "");
  EXPECT_EQ(form->file->bytes, 0u);
  EXPECT_TRUE(exists(dest_path()));
  EXPECT_EQ(read_file(dest_path()), "");
}

// Content with delimiter-like bytes: CRLF "--" and growing prefixes of the boundary, each
// followed by something else, so none is a delimiter.
std::string near_misses(const std::string& boundary) {
  std::string out = "\r\n--\r\n-\r\r\n\r\n--";
  for (size_t j = 0; j < boundary.size(); ++j) out += "\r\n--" + boundary.substr(0, j) + "Z";
  return out + "\r\n--" + boundary.substr(0, boundary.size() - 1) + "\r\n";
}

TEST_F(MultipartTest, DelimitersStraddlingReadPieces) {
  const std::string boundary = "------------------------8f0a6c2e5d1b4a97";
  const std::string delimiter = "\r\n--" + boundary;
  const std::string head =
      "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n\r\n";
  const std::string tail =
      delimiter + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nfine-tune" + delimiter + "--\r\n";
  std::mt19937 rng(7);
  // The file part's closing delimiter starts `k` bytes before the end of the first or the second
  // piece, for every k that splits it, and the piece edge also falls inside the near misses.
  for (const size_t edge : {kMultipartReadBytes, 2 * kMultipartReadBytes}) {
    for (size_t k = 0; k <= delimiter.size() + 1; ++k) {
      const size_t content_size = edge - k - head.size();
      std::string content(content_size, '\0');
      for (char& c : content) c = static_cast<char>('a' + rng() % 26);
      const std::string misses = near_misses(boundary);
      content.replace(content_size - misses.size() - k % 7, misses.size(), misses);
      const std::string planted = "\r\n--" + boundary.substr(0, k % boundary.size()) + "!";
      content.replace(edge / 2, planted.size(), planted);
      auto form = parse(head + content + tail, "multipart/form-data; boundary=" + boundary);
      ASSERT_TRUE(form.ok()) << "edge " << edge << " k " << k << ": " << form.status().to_string();
      ASSERT_TRUE(form->file);
      EXPECT_EQ(form->file->bytes, content.size()) << "edge " << edge << " k " << k;
      EXPECT_TRUE(read_file(dest_path()) == content) << "edge " << edge << " k " << k;
      EXPECT_EQ(form->fields["purpose"], "fine-tune") << "edge " << edge << " k " << k;
      ASSERT_EQ(::unlink(dest_path().c_str()), 0);
    }
  }
  // A text field whose value crosses the edge and a part header that does.
  for (size_t k = 0; k < 300; k += 7) {
    const std::string field_head = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"big\"\r\n\r\n";
    const std::string value(kMultipartReadBytes - field_head.size() - 150 + k, 'v');
    const std::string body = field_head + value + delimiter +
                             "\r\nContent-Disposition: form-data; name=\"after\"\r\nContent-Type: text/plain\r\n\r\n1" +
                             delimiter + "--";
    MultipartLimits limits;
    limits.max_field_bytes = 128 << 10;
    auto form = parse(body, "multipart/form-data; boundary=" + boundary, 1 << 20, limits);
    ASSERT_TRUE(form.ok()) << k << ": " << form.status().to_string();
    EXPECT_EQ(form->fields["big"].size(), value.size());
    EXPECT_EQ(form->fields["after"], "1");
  }
}

TEST_F(MultipartTest, RefusesWhatIsNotMultipartFormData) {
  expect_refused(kCurlBody, "application/json", "not multipart/form-data");
  expect_refused(kCurlBody, "multipart/mixed; boundary=------------------------d74496d66958873e",
                 "not multipart/form-data");
  expect_refused(kCurlBody, "multipart/form-data", "no boundary");
  expect_refused(kCurlBody, "multipart/form-data; boundary=\"\"", "no boundary");
  expect_refused(kCurlBody, "multipart/form-data; boundary=\"unterminated", "unterminated");
  expect_refused(kCurlBody, "multipart/form-data; boundary=a; boundary=b", "twice");
  expect_refused(kCurlBody, "multipart/form-data; boundary=" + std::string(71, 'x'), "longer than 70");
  expect_refused(kCurlBody, "multipart/form-data; boundary=\"trailing \"", "ends with a space");
  // Exactly 70 characters is allowed.
  const std::string b70(70, 'x');
  auto form = parse("--" + b70 + "\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--" + b70 + "--",
                    "multipart/form-data; boundary=" + b70);
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  EXPECT_EQ(form->fields["a"], "1");
}

TEST_F(MultipartTest, RefusesPartsWithoutAName) {
  const std::string type = "multipart/form-data; boundary=b";
  expect_refused("--b\r\n\r\nvalue\r\n--b--", type, "no name");
  expect_refused("--b\r\nContent-Disposition: form-data\r\n\r\nvalue\r\n--b--", type, "no name");
  expect_refused("--b\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nvalue\r\n--b--", type, "no name");
  expect_refused("--b\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\nvalue\r\n--b--", type, "no name");
  expect_refused("--b\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nvalue\r\n--b--", type, "not form-data");
  expect_refused(
      "--b\r\nContent-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=c\r\n\r\n"
      "v\r\n--b--",
      type, "two Content-Disposition");
  expect_refused("--b\r\nno colon here\r\n\r\nv\r\n--b--", type, "malformed part header");
  expect_refused("--b\r\nContent-Disposition: form-data; name=a\nX: y\r\n\r\nv\r\n--b--", type, "control character");
}

TEST_F(MultipartTest, RefusesASecondFilePart) {
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"one\"\r\n\r\n1\r\n"
      "--b\r\nContent-Disposition: form-data; name=\"file2\"; filename=\"two\"\r\n\r\n2\r\n--b--";
  expect_refused(body, "multipart/form-data; boundary=b", "second file part");
}

TEST_F(MultipartTest, RefusesFieldsBeyondTheLimits) {
  const std::string type = "multipart/form-data; boundary=b";
  MultipartLimits limits;
  limits.max_fields = 2;
  limits.max_field_bytes = 10;
  limits.max_part_header_bytes = 100;
  auto field = [](const std::string& name, const std::string& value) {
    return "--b\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value + "\r\n";
  };
  auto form = parse(field("a", std::string(10, 'x')) + field("b", "") + "--b--", type, 1 << 20, limits);
  ASSERT_TRUE(form.ok()) << form.status().to_string();  // at every limit: fine
  expect_refused(field("a", std::string(11, 'x')) + "--b--", type, "field \"a\" exceeds 10 bytes", 1 << 20, limits);
  expect_refused(field("a", "1") + field("b", "2") + field("c", "3") + "--b--", type, "more than 2 fields", 1 << 20,
                 limits);
  expect_refused(field("a", "1") + field("a", "2") + "--b--", type, "given twice", 1 << 20, limits);
  expect_refused(
      "--b\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: " + std::string(100, 'p') + "\r\n\r\nv\r\n--b--",
      type, "header exceeds 100 bytes", 1 << 20, limits);
  // A header block that never ends is cut off at the limit too, not read to the end of the file.
  expect_refused("--b\r\nX-Pad: " + std::string(300 << 10, 'p'), type, "header exceeds 100 bytes", 1 << 20, limits);
  // The file part counts against neither max_fields nor max_field_bytes.
  form = parse(field("a", "1") + field("b", "2") +
                   "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\n\r\n" + std::string(100, 'z') +
                   "\r\n--b--",
               type, 100, limits);
  ASSERT_TRUE(form.ok()) << form.status().to_string();
  EXPECT_EQ(form->file->bytes, 100u);
}

TEST_F(MultipartTest, RefusesAFileOverItsLimitAndRemovesIt) {
  const std::string body = "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n" +
                           std::string(200 << 10, 'z') + "\r\n--b--\r\n";
  expect_refused(body, "multipart/form-data; boundary=b", "file exceeds 131072 bytes", 128 << 10);
}

TEST_F(MultipartTest, RefusesMalformedDelimiterLines) {
  const std::string type = "multipart/form-data; boundary=b";
  expect_refused("--b\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--bX\r\n--b--", type,
                 "malformed delimiter");
  expect_refused("--b junk\r\n", type, "malformed delimiter");
  expect_refused("no delimiter in here at all", type, "no delimiter");
  expect_refused("", type, "no delimiter");
}

TEST_F(MultipartTest, LeavesAnExistingDestinationAlone) {
  write_file(dest_path(), "someone else's");
  auto form = parse(kCurlBody, kCurlType);
  ASSERT_FALSE(form.ok());
  EXPECT_EQ(form.status().code(), StatusCode::Internal) << form.status().to_string();
  EXPECT_EQ(read_file(dest_path()), "someone else's");
  EXPECT_EQ(::unlink(dest_path().c_str()), 0);
  EXPECT_EQ(read_multipart(dir_.file("missing"), kCurlType, dest_path(), 1 << 20).status().code(),
            StatusCode::Internal);
}

TEST_F(MultipartTest, EveryTruncationIsAnError) {
  // Every strict prefix of a body that ends at its close delimiter is refused as truncated (or,
  // before the first delimiter line is whole, as having none), and leaves no file.
  const std::string body = kCurlBody.substr(0, kCurlBody.size() - 2);  // without the optional CRLF
  for (size_t n = 0; n < body.size(); ++n) {
    write_file(body_path(), body.substr(0, n));
    auto form = read_multipart(body_path(), kCurlType, dest_path(), 1 << 20);
    ASSERT_FALSE(form.ok()) << "prefix of " << n << " bytes accepted";
    EXPECT_EQ(form.status().code(), StatusCode::InvalidArgument) << n;
    ASSERT_FALSE(exists(dest_path())) << n;
  }
  // What follows the close delimiter (CRLF, epilogue) is optional, so those prefixes are whole.
  for (size_t n = body.size(); n <= kCurlBody.size(); ++n) {
    auto form = parse(kCurlBody.substr(0, n), kCurlType);
    ASSERT_TRUE(form.ok()) << n << ": " << form.status().to_string();
    ASSERT_EQ(::unlink(dest_path().c_str()), 0);
  }
}

TEST_F(MultipartTest, SurvivesMangledBodies) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string body = kCurlBody;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0:
          body[at] = static_cast<char>(rng());
          break;
        case 1:
          body.erase(at, 1 + rng() % 8);
          break;
        default:
          body.insert(at, std::string(1 + rng() % 3, "\r\n-\"\\;="[rng() % 7]));
          break;
      }
      if (body.empty()) body = "-";
    }
    MultipartLimits limits;
    limits.max_fields = 1 + rng() % 3;
    limits.max_field_bytes = rng() % 40;
    auto form = parse(body, kCurlType, rng() % 64, limits);
    if (form.ok()) {
      if (form->file) {
        EXPECT_EQ(read_file(dest_path()).size(), form->file->bytes);
        ASSERT_EQ(::unlink(dest_path().c_str()), 0);
      }
    } else {
      ASSERT_FALSE(exists(dest_path())) << form.status().to_string();
    }
  }
}

TEST(HeaderParams, ParsesTokensQuotedStringsAndEscapes) {
  auto v = parse_header_value(" Form-Data ; name=\"a;b\" ;FileName=\"x \\\"y\\\" \\\\z\";;size=12 ");
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->value, "form-data");
  EXPECT_EQ(v->param("name"), "a;b");
  EXPECT_EQ(v->param("filename"), "x \"y\" \\z");
  EXPECT_EQ(v->param("size"), "12");
  EXPECT_FALSE(v->param("other"));
  EXPECT_TRUE(parse_header_value("text/plain").ok());
  for (const char* bad : {"a; =x", "a; name", "a; name=", "a; name=\"x", "a; name=\"x\"y", "a; n=1; N=2",
                          "a; name=x\r\nInjected: 1", "a; name=\"x\\"}) {
    EXPECT_FALSE(parse_header_value(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace cellserve::net
