#include "agent/http/response.h"

#include <string>

#include "absl/strings/cord.h"
#include "agent/base/status_field.h"
#include "gtest/gtest.h"

namespace hawk::http {
namespace {

struct SerializeCase {
  std::string name;
  Response response;
  Framing framing;
  std::string expected;
};

Response Make(int status, std::string content_type, std::string body,
              std::vector<std::pair<std::string, std::string>> headers = {}) {
  Response r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

Framing Frame(bool keep_alive, bool http10 = false, bool head = false) {
  Framing f;
  f.keep_alive = keep_alive;
  f.http10 = http10;
  f.head = head;
  return f;
}

class SerializeTest : public ::testing::TestWithParam<SerializeCase> {};

TEST_P(SerializeTest, Serializes) {
  EXPECT_EQ(Serialize(GetParam().response, GetParam().framing), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SerializeTest,
    ::testing::Values(
        SerializeCase{"KeepAlive", Make(200, "text/plain", "hi"), Frame(true),
                      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"},
        SerializeCase{"Close", Make(404, "", ""), Frame(false),
                      "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
        SerializeCase{"Http10KeepAlive", Make(200, "", "x"), Frame(true, true),
                      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\nx"},
        SerializeCase{"Head", Make(200, "application/json", "{}"), Frame(true, false, true),
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                      "2\r\n\r\n"},
        SerializeCase{"NoContentHasNoLength", Make(204, "", ""), Frame(true),
                      "HTTP/1.1 204 No Content\r\n\r\n"},
        SerializeCase{"ExtraHeadersInOrderFramingDropped",
                      Make(405, "", "",
                           {{"Allow", "GET, PUT"},
                            {"content-length", "99"},
                            {"Connection", "keep-alive"},
                            {"Transfer-Encoding", "chunked"},
                            {"X-A", "1"}}),
                      Frame(true),
                      "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, PUT\r\nX-A: 1\r\n"
                      "Content-Length: 0\r\n\r\n"},
        SerializeCase{"HeaderInjectionNeutralized", Make(200, "", "", {{"X-A", "a\r\nX-B: b"}}),
                      Frame(true),
                      "HTTP/1.1 200 OK\r\nX-A: a  X-B: b\r\nContent-Length: 0\r\n\r\n"},
        SerializeCase{"InvalidStatusBecomes500", Make(42, "", ""), Frame(true),
                      "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"},
        SerializeCase{"UnknownStatusHasEmptyReason", Make(299, "", ""), Frame(true),
                      "HTTP/1.1 299 \r\nContent-Length: 0\r\n\r\n"}),
    [](const ::testing::TestParamInfo<SerializeCase>& param_info) {
      return param_info.param.name;
    });

TEST(Serialize, BoolOverload) {
  EXPECT_EQ(Serialize(Make(200, "", "ok"), false),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  EXPECT_EQ(Serialize(Make(200, "", "ok"), true), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
}

TEST(Serialize, ReasonPhrases) {
  EXPECT_EQ(ReasonPhrase(408), "Request Timeout");
  EXPECT_EQ(ReasonPhrase(413), "Content Too Large");
  EXPECT_EQ(ReasonPhrase(414), "URI Too Long");
  EXPECT_EQ(ReasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(ReasonPhrase(503), "Service Unavailable");
  EXPECT_EQ(ReasonPhrase(299), "");
}

TEST(Serialize, Streams) {
  EXPECT_EQ(SerializeStreamHead(200, "application/x-ndjson", Frame(true)),
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
            "Transfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(SerializeStreamHead(200, "", Frame(false)),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(SerializeStreamHead(200, "text/plain", Frame(true, true)),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(EncodeChunk("hello"), "5\r\nhello\r\n");
  EXPECT_EQ(EncodeChunk(std::string(26, 'x')), "1a\r\n" + std::string(26, 'x') + "\r\n");
  EXPECT_EQ(EncodeChunk(""), "");
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

TEST(JsonError, Body) {
  Response r = JsonError(400, "INVALID_ARGUMENT", "bad \"weight\"", "spec.weight");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"error":{"code":"INVALID_ARGUMENT","message":"bad \"weight\"",)"
                    R"("field":"spec.weight"}})");
  EXPECT_EQ(JsonError(404, "NOT_FOUND", "no such endpoint: /x").body,
            R"({"error":{"code":"NOT_FOUND","message":"no such endpoint: /x"}})");
}

struct StatusCase {
  absl::Status status;
  int http_status;
  std::string code;
};

TEST(ErrorFromStatus, MapsCodes) {
  std::vector<StatusCase> cases = {
      {absl::InvalidArgumentError("m"), 400, "INVALID_ARGUMENT"},
      {absl::NotFoundError("m"), 404, "NOT_FOUND"},
      {absl::AlreadyExistsError("m"), 409, "ALREADY_EXISTS"},
      {absl::AbortedError("m"), 409, "ABORTED"},
      {absl::FailedPreconditionError("m"), 409, "FAILED_PRECONDITION"},
      {absl::UnavailableError("m"), 503, "UNAVAILABLE"},
      {absl::DeadlineExceededError("m"), 504, "DEADLINE_EXCEEDED"},
      {absl::UnimplementedError("m"), 501, "UNIMPLEMENTED"},
      {absl::DataLossError("m"), 500, "DATA_LOSS"},
      {absl::InternalError("m"), 500, "INTERNAL"},
      {absl::PermissionDeniedError("m"), 500, "PERMISSION_DENIED"},
  };
  for (const StatusCase& c : cases) {
    SCOPED_TRACE(c.status.ToString());
    Response r = ErrorFromStatus(c.status);
    EXPECT_EQ(r.status, c.http_status);
    EXPECT_EQ(r.body, R"({"error":{"code":")" + c.code + R"(","message":"m"}})");
  }
}

TEST(ErrorFromStatus, FieldFromPayload) {
  absl::Status status =
      base::WithField(absl::InvalidArgumentError("weight must be 0..256"), "servers[1].weight");
  EXPECT_EQ(ErrorFromStatus(status).body,
            R"({"error":{"code":"INVALID_ARGUMENT","message":"weight must be 0..256",)"
            R"("field":"servers[1].weight"}})");
}

TEST(ErrorFromStatus, OkIsAnInternalError) {
  EXPECT_EQ(ErrorFromStatus(absl::OkStatus()).status, 500);
}

}  // namespace
}  // namespace hawk::http
