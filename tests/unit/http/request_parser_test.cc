// RequestParser over byte streams, table-driven. Every case runs twice: all bytes in one Feed()
// and one byte per Feed(), since llhttp hands data over in pieces that must be copied.

#include "agent/http/request_parser.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

struct Expected {
  std::string method;
  std::string target;
  std::string path;
  std::string query;
  bool keep_alive = true;
  std::string body;
};

struct Case {
  std::string name;
  std::string input;
  std::vector<Expected> requests;  // completed, in order
  ParseErrorKind error = ParseErrorKind::kNone;
  std::string error_substring;
  ParserOptions options;
};

Case Ok(std::string name, std::string input, std::vector<Expected> requests,
        ParserOptions options = {}) {
  return Case{std::move(name), std::move(input), std::move(requests), ParseErrorKind::kNone, "",
              options};
}

Case Err(std::string name, std::string input, std::vector<Expected> requests, ParseErrorKind error,
         std::string error_substring, ParserOptions options = {}) {
  return Case{std::move(name), std::move(input),           std::move(requests),
              error,           std::move(error_substring), options};
}

ParserOptions Limits(size_t line, size_t header_bytes, size_t header_count, size_t body) {
  ParserOptions options;
  options.max_request_line_bytes = line;
  options.max_header_bytes = header_bytes;
  options.max_header_count = header_count;
  options.max_body_bytes = body;
  return options;
}

std::vector<Case> Cases() {
  return {
      Ok("SimpleGet", "GET /v1/workers?pid=42 HTTP/1.1\r\nHost: x\r\n\r\n",
         {{"GET", "/v1/workers?pid=42", "/v1/workers", "pid=42", true, ""}}),
      Ok("KeepAliveByDefault", "GET / HTTP/1.1\r\n\r\n", {{"GET", "/", "/", "", true, ""}}),
      Ok("ConnectionClose", "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
         {{"GET", "/", "/", "", false, ""}}),
      Ok("ConnectionCloseInTokenList", "GET / HTTP/1.1\r\nconnection: TE, Close\r\n\r\n",
         {{"GET", "/", "/", "", false, ""}}),
      Ok("Http10ClosesByDefault", "GET / HTTP/1.0\r\n\r\n", {{"GET", "/", "/", "", false, ""}}),
      Ok("Http10KeepAlive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
         {{"GET", "/", "/", "", true, ""}}),
      Ok("ContentLengthBody", "POST /v1/state HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
         {{"POST", "/v1/state", "/v1/state", "", true, "hello"}}),
      Ok("ChunkedBody",
         "PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
         "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n",
         {{"PUT", "/x", "/x", "", true, "hello, world"}}),
      Ok("Pipelined",
         "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
         "GET /c?x HTTP/1.1\r\nConnection: close\r\n\r\n",
         {{"GET", "/a", "/a", "", true, ""},
          {"POST", "/b", "/b", "", true, "hi"},
          {"GET", "/c?x", "/c", "x", false, ""}}),
      Ok("IncompleteRequestYieldsNothingYet", "GET / HTTP/1.1\r\nHost: x\r\n", {}),
      Ok("AbsoluteFormTarget", "GET http://hawk.local/v1/workers?a=b HTTP/1.1\r\n\r\n",
         {{"GET", "http://hawk.local/v1/workers?a=b", "/v1/workers", "a=b", true, ""}}),
      Ok("FragmentIsDropped", "GET /p?q=1#frag HTTP/1.1\r\n\r\n",
         {{"GET", "/p?q=1#frag", "/p", "q=1", true, ""}}),
      Ok("UpgradeIsIgnoredAndParsingGoesOn",
         "GET /u HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nGET /v "
         "HTTP/1.1\r\n\r\n",
         {{"GET", "/u", "/u", "", true, ""}, {"GET", "/v", "/v", "", true, ""}}),
      Err("MalformedMethod", "FOO / HTTP/1.1\r\n\r\n", {}, ParseErrorKind::kMalformed, "malformed"),
      Err("MalformedBytes", std::string("GET /\x01\xff HTTP/1.1\r\n\r\n"), {},
          ParseErrorKind::kMalformed, "Invalid char in url"),
      Err("ErrorAfterGoodRequestKeepsIt",
          "GET /ok HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nBad Header\r\n\r\n",
          {{"GET", "/ok", "/ok", "", true, ""}}, ParseErrorKind::kMalformed, "malformed"),
      Err("ContentLengthWithChunkedIsRejected",
          "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", {},
          ParseErrorKind::kMalformed, "Content-Length"),
      Err("Http2IsRejected", "GET / HTTP/2.0\r\n\r\n", {}, ParseErrorKind::kMalformed, ""),
      Err("RequestLineLimit", "GET /" + std::string(100, 'a') + " HTTP/1.1\r\n\r\n", {},
          ParseErrorKind::kRequestLineTooLong, "request line longer than 64 bytes",
          Limits(64, 1024, 10, 1024)),
      Ok("RequestLineAtLimit", "GET /" + std::string(40, 'a') + " HTTP/1.1\r\n\r\n",
         {{"GET", "/" + std::string(40, 'a'), "/" + std::string(40, 'a'), "", true, ""}},
         Limits(64, 1024, 10, 1024)),
      Err("HeaderBytesLimit", "GET / HTTP/1.1\r\nX-Big: " + std::string(200, 'v') + "\r\n\r\n", {},
          ParseErrorKind::kHeadersTooLarge, "headers larger than 128 bytes",
          Limits(64, 128, 10, 1024)),
      Err("HeaderCountLimit", "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", {},
          ParseErrorKind::kHeadersTooLarge, "more than 2 headers", Limits(64, 1024, 2, 1024)),
      Ok("HeaderCountAtLimit", "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n",
         {{"GET", "/", "/", "", true, ""}}, Limits(64, 1024, 2, 1024)),
      Err("DeclaredBodyLimit", "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", {},
          ParseErrorKind::kBodyTooLarge, "body of 11 bytes is larger than 10 bytes",
          Limits(64, 1024, 10, 10)),
      Err("ChunkedBodyLimit",
          "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n", {},
          ParseErrorKind::kBodyTooLarge, "body larger than 10 bytes", Limits(64, 1024, 10, 10)),
      Ok("BodyAtLimit", "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789",
         {{"POST", "/", "/", "", true, "0123456789"}}, Limits(64, 1024, 10, 10)),
  };
}

enum class FeedMode { kWhole, kByteAtATime };

class RequestParserTest : public ::testing::TestWithParam<std::tuple<Case, FeedMode>> {};

TEST_P(RequestParserTest, Parses) {
  const auto& [c, mode] = GetParam();
  RequestParser parser(c.options);
  std::vector<Request> requests;
  absl::Status status;
  if (mode == FeedMode::kWhole) {
    status = parser.Feed(c.input, &requests);
  } else {
    for (char byte : c.input) {
      status = parser.Feed(absl::string_view(&byte, 1), &requests);
      if (!status.ok()) break;
    }
  }
  if (c.error == ParseErrorKind::kNone) {
    EXPECT_TRUE(status.ok()) << status;
  } else {
    EXPECT_FALSE(status.ok());
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.error_substring));
    EXPECT_EQ(status.code(), c.error == ParseErrorKind::kMalformed
                                 ? absl::StatusCode::kInvalidArgument
                                 : absl::StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(parser.error_kind(), c.error);
  ASSERT_EQ(requests.size(), c.requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(requests[i].method, c.requests[i].method);
    EXPECT_EQ(requests[i].target, c.requests[i].target);
    EXPECT_EQ(requests[i].path, c.requests[i].path);
    EXPECT_EQ(requests[i].query, c.requests[i].query);
    EXPECT_EQ(requests[i].keep_alive, c.requests[i].keep_alive);
    EXPECT_EQ(requests[i].body, c.requests[i].body);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, RequestParserTest,
    ::testing::Combine(::testing::ValuesIn(Cases()),
                       ::testing::Values(FeedMode::kWhole, FeedMode::kByteAtATime)),
    [](const ::testing::TestParamInfo<RequestParserTest::ParamType>& param_info) {
      return std::get<0>(param_info.param).name +
             (std::get<1>(param_info.param) == FeedMode::kWhole ? "_Whole" : "_ByteAtATime");
    });

TEST(RequestParser, HeadersAreCopiedTrimmedAndLookedUpInAnyCase) {
  RequestParser parser;
  std::vector<Request> requests;
  std::string input =
      "GET / HTTP/1.1\r\nHost: hawk\r\nX-Empty:\r\nX-Spaces:   a b  \r\nx-dup: 1\r\nX-Dup: "
      "2\r\n\r\n";
  // Fed from a buffer that is overwritten afterwards: the request must own its bytes.
  std::string buffer = input;
  ASSERT_TRUE(parser.Feed(buffer, &requests).ok());
  buffer.assign(buffer.size(), '#');
  ASSERT_EQ(requests.size(), 1u);
  const Request& r = requests[0];
  EXPECT_THAT(r.headers,
              ElementsAre(Pair("Host", "hawk"), Pair("X-Empty", ""), Pair("X-Spaces", "a b"),
                          Pair("x-dup", "1"), Pair("X-Dup", "2")));
  EXPECT_EQ(r.Header("HOST"), absl::optional<absl::string_view>("hawk"));
  EXPECT_EQ(r.Header("x-empty"), absl::optional<absl::string_view>(""));
  EXPECT_EQ(r.Header("X-DUP"), absl::optional<absl::string_view>("1"));
  EXPECT_EQ(r.Header("Missing"), absl::nullopt);
  EXPECT_EQ(r.http_major, 1);
  EXPECT_EQ(r.http_minor, 1);
}

TEST(RequestParser, ChunkedTrailersAreHeaders) {
  RequestParser parser;
  std::vector<Request> requests;
  ASSERT_TRUE(parser
                  .Feed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "3\r\nabc\r\n0\r\nX-Checksum: 42\r\n\r\n",
                        &requests)
                  .ok());
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].body, "abc");
  EXPECT_EQ(requests[0].Header("x-checksum"), absl::optional<absl::string_view>("42"));
}

TEST(RequestParser, ProgressFlags) {
  RequestParser parser;
  std::vector<Request> requests;
  EXPECT_FALSE(parser.message_in_progress());
  ASSERT_TRUE(parser.Feed("POST / HTTP/1.1\r\nContent-Length: 3\r\n", &requests).ok());
  EXPECT_TRUE(parser.message_in_progress());
  EXPECT_FALSE(parser.headers_complete());
  EXPECT_EQ(parser.messages_started(), 1u);
  ASSERT_TRUE(parser.Feed("Expect: 100-continue\r\n\r\n", &requests).ok());
  EXPECT_TRUE(parser.headers_complete());
  EXPECT_TRUE(parser.expects_continue());
  ASSERT_TRUE(parser.Feed("abc", &requests).ok());
  EXPECT_FALSE(parser.message_in_progress());
  EXPECT_FALSE(parser.expects_continue());
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].body, "abc");
}

TEST(RequestParser, ErrorIsSticky) {
  RequestParser parser;
  std::vector<Request> requests;
  absl::Status first = parser.Feed("BAD\r\n", &requests);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(parser.Feed("GET / HTTP/1.1\r\n\r\n", &requests), first);
  EXPECT_TRUE(requests.empty());
}

TEST(RequestParser, HttpStatusForEachErrorKind) {
  EXPECT_EQ(HttpStatusFor(ParseErrorKind::kMalformed), 400);
  EXPECT_EQ(HttpStatusFor(ParseErrorKind::kRequestLineTooLong), 414);
  EXPECT_EQ(HttpStatusFor(ParseErrorKind::kHeadersTooLarge), 431);
  EXPECT_EQ(HttpStatusFor(ParseErrorKind::kBodyTooLarge), 413);
}

TEST(RequestParser, TheHeadCheckSeesEachHeadBeforeItsBodyAndARefusalStopsThere) {
  std::vector<std::string> seen;
  RequestParser parser(ParserOptions{.max_body_bytes = 10}, [&](const Request& head) {
    seen.push_back(absl::StrCat(head.method, " ", head.path, " body=", head.body.size()));
    return head.path != "/refused";
  });
  std::vector<Request> requests;
  ASSERT_TRUE(parser.Feed("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nab", &requests).ok());
  EXPECT_THAT(seen, ElementsAre("POST /a body=0"));  // before any body byte
  // Refused before its declared size is held against the limit: no 413, and no byte of it is
  // parsed, even in the same Feed() as the request before it.
  absl::Status refused = parser.Feed(
      "c"
      "PUT /refused HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n{\"never\"",
      &requests);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(parser.error_kind(), ParseErrorKind::kRefused);
  EXPECT_EQ(HttpStatusFor(ParseErrorKind::kRefused), 403);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].body, "abc");
  EXPECT_THAT(seen, ElementsAre("POST /a body=0", "PUT /refused body=0"));
  EXPECT_EQ(parser.Feed("GET / HTTP/1.1\r\n\r\n", &requests), refused);  // sticky
}

TEST(Request, QueryParams) {
  Request r;
  r.query = "pid=42&name=be%2Fweb+1&flag&empty=&pid=7&enc%20key=v&bad=%zz%4";
  EXPECT_EQ(r.QueryParam("pid"), absl::optional<std::string>("42"));  // the first one
  EXPECT_EQ(r.QueryParam("name"), absl::optional<std::string>("be/web 1"));
  EXPECT_EQ(r.QueryParam("flag"), absl::optional<std::string>(""));
  EXPECT_EQ(r.QueryParam("empty"), absl::optional<std::string>(""));
  EXPECT_EQ(r.QueryParam("enc key"), absl::optional<std::string>("v"));
  EXPECT_EQ(r.QueryParam("bad"), absl::optional<std::string>("%zz%4"));
  EXPECT_EQ(r.QueryParam("missing"), absl::nullopt);
}

TEST(Request, DecodeQueryComponent) {
  EXPECT_EQ(DecodeQueryComponent("a+b%20c%2b%2Bd"), "a b c++d");
  EXPECT_EQ(DecodeQueryComponent("100%"), "100%");
  EXPECT_EQ(DecodeQueryComponent("%00"), std::string(1, '\0'));
}

TEST(Request, SplitTarget) {
  std::string path, query;
  SplitTarget("*", &path, &query);
  EXPECT_EQ(path, "*");
  SplitTarget("http://host", &path, &query);
  EXPECT_EQ(path, "/");
  SplitTarget("?x=1", &path, &query);
  EXPECT_EQ(path, "/");
  EXPECT_EQ(query, "x=1");
}

}  // namespace
}  // namespace hawk::http
