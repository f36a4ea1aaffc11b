// The request parser: framing, limits (414, 431, 413 for every transfer
// encoding, checked before the bytes are kept), malformed input (400, 501, 505).
#include "berth/http/parser.h"

#include <gtest/gtest.h>

namespace berth::http {
namespace {

ParserLimits Small() {
  ParserLimits l;
  l.max_request_line = 256;
  l.max_header_bytes = 1024;
  l.max_headers = 8;
  l.max_body_bytes = 100;
  return l;
}

// Feeds the text whole, or one byte at a time.
RequestParser Parse(const std::string& text, bool bytewise = false, size_t* used = nullptr) {
  RequestParser p(Small());
  size_t total = 0;
  if (bytewise) {
    for (size_t i = 0; i < text.size() && !p.done() && !p.failed(); ++i) total += p.Feed(text.data() + i, 1);
  } else {
    total = p.Feed(text.data(), text.size());
  }
  if (used) *used = total;
  return p;
}

TEST(ParserTest, SimpleGetWithQuery) {
  for (bool bytewise : {false, true}) {
    auto p = Parse("GET /v1/jobs?state=running&limit=5&x=a%20b+c HTTP/1.1\r\nHost: h\r\nX-A:  v \r\n\r\n", bytewise);
    ASSERT_TRUE(p.done()) << p.error_message();
    EXPECT_EQ(p.request().method, "GET");
    EXPECT_EQ(p.request().path, "/v1/jobs");
    EXPECT_EQ(p.request().get_param_value("state"), "running");
    EXPECT_EQ(p.request().get_param_value("x"), "a b c");
    EXPECT_TRUE(p.request().has_param("limit"));
    EXPECT_EQ(p.request().get_header_value("x-a"), "v");  // names case-insensitive, value trimmed
    EXPECT_TRUE(p.keep_alive());
  }
}

TEST(ParserTest, ContentLengthBodyAndPipelining) {
  size_t used = 0;
  const std::string one = "POST /v1/jobs HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  auto p = Parse(one + "GET / HTTP/1.1\r\n\r\n", false, &used);
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.request().body, "hello");
  EXPECT_EQ(used, one.size());  // the next request is left for later
}

TEST(ParserTest, ChunkedBody) {
  for (bool bytewise : {false, true}) {
    auto p = Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n", bytewise);
    ASSERT_TRUE(p.done()) << p.error_message();
    EXPECT_EQ(p.request().body, "hello world");
  }
}

TEST(ParserTest, BareLfAndLeadingEmptyLines) {
  auto p = Parse("\r\nGET /a HTTP/1.0\nConnection: keep-alive\n\n");
  ASSERT_TRUE(p.done()) << p.error_message();
  EXPECT_TRUE(p.keep_alive());
  EXPECT_FALSE(Parse("GET /a HTTP/1.0\r\n\r\n").keep_alive());
  EXPECT_FALSE(Parse("GET /a HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive());
}

TEST(ParserTest, BodyLimitForContentLength) {
  auto over = Parse("POST /x HTTP/1.1\r\nContent-Length: 101\r\n\r\n");
  ASSERT_TRUE(over.failed());
  EXPECT_EQ(over.error_status(), 413);
  auto huge = Parse("POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n");
  EXPECT_EQ(huge.error_status(), 413);
  auto negative = Parse("POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n");
  EXPECT_EQ(negative.error_status(), 400);
  EXPECT_NE(negative.error_message().find("negative"), std::string::npos);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").error_status(), 400);
  EXPECT_TRUE(Parse("POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'a')).done());
}

TEST(ParserTest, BodyLimitForChunkedBeforeBuffering) {
  // The declared chunk size already passes the limit: refused before its data.
  auto p = Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n" + std::string(80, 'a') + "\r\n20\r\n");
  ASSERT_TRUE(p.failed());
  EXPECT_EQ(p.error_status(), 413);
  EXPECT_LE(p.request().body.size(), 100u);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n").error_status(), 413);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").error_status(), 400);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n").error_status(), 400);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").error_status(), 501);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").error_status(), 400);
}

TEST(ParserTest, BodyLimitPerRequestFromItsHead) {
  ParserLimits limits;
  limits.max_body_bytes = 100;
  // /small takes 10 bytes; anything else the parser's own limit (never more).
  BodyLimit per_route = [](const Request& r) { return r.path == "/small" ? size_t{10} : size_t{1} << 30; };
  RequestParser p(limits, per_route);
  std::string req = "POST /small HTTP/1.1\r\nContent-Length: 11\r\n\r\n";
  p.Feed(req.data(), req.size());
  ASSERT_TRUE(p.failed());
  EXPECT_EQ(p.error_status(), 413);
  EXPECT_NE(p.error_message().find("over the limit of 10 bytes for POST /small"), std::string::npos) << p.error_message();
  p.Reset();
  req = "POST /small HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n";
  p.Feed(req.data(), req.size());
  EXPECT_EQ(p.error_status(), 413);
  p.Reset();
  req = "POST /big HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'a');
  p.Feed(req.data(), req.size());
  EXPECT_TRUE(p.done());
  p.Reset();
  req = "POST /big HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
  p.Feed(req.data(), req.size());
  EXPECT_EQ(p.error_status(), 413);  // the per-route answer never raises the parser's limit
}

TEST(ParserTest, HeaderLimitsBeforeTheLineEnds) {
  // 431 as soon as the header block passes the limit, without its newline.
  auto big = Parse("GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a'));
  ASSERT_TRUE(big.failed());
  EXPECT_EQ(big.error_status(), 431);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 9; ++i) many += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Parse(many + "\r\n").error_status(), 431);
  EXPECT_EQ(Parse("GET /" + std::string(300, 'a') + " HTTP/1.1\r\n").error_status(), 414);
}

TEST(ParserTest, MalformedHeadsAre400Or505) {
  EXPECT_EQ(Parse("GET / HTTP/2.0\r\n\r\n").error_status(), 505);
  EXPECT_EQ(Parse("GET /  HTTP/1.1\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("G(T / HTTP/1.1\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET nopath HTTP/1.1\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET /%zz HTTP/1.1\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET /%00 HTTP/1.1\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nNo colon\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nBad Name: v\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n").error_status(), 400);
  EXPECT_EQ(Parse(std::string("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n")).error_status(), 400);
  EXPECT_EQ(Parse("\r\n\r\n\r\n\r\n\r\n\r\n").error_status(), 400);
}

TEST(ParserTest, ExpectContinueAndReset) {
  RequestParser p(Small());
  const std::string head = "POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  p.Feed(head.data(), head.size());
  EXPECT_TRUE(p.headers_done());
  EXPECT_FALSE(p.done());
  EXPECT_TRUE(p.expects_continue());
  p.Feed("ok", 2);
  ASSERT_TRUE(p.done());
  p.Reset();
  EXPECT_FALSE(p.started());
  const std::string next = "GET /y HTTP/1.1\r\n\r\n";
  p.Feed(next.data(), next.size());
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.request().path, "/y");
  EXPECT_TRUE(p.request().body.empty());
}

TEST(ParserTest, AbsoluteFormAndAsterisk) {
  auto p = Parse("GET http://h:1/v1/nodes?a=1 HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.request().path, "/v1/nodes");
  EXPECT_EQ(Parse("OPTIONS * HTTP/1.1\r\n\r\n").request().path, "*");
}

}  // namespace
}  // namespace berth::http
