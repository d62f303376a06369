// The admission rules on request heads (agent/api/authentication.h), table-driven: pure, no
// sockets.

#include "agent/api/authentication.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::api {
namespace {

using ::testing::HasSubstr;

http::Request Head(std::string method, std::string target,
                   std::vector<std::pair<std::string, std::string>> headers) {
  http::Request request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.path = request.target;
  request.headers = std::move(headers);
  return request;
}

// The status a request is refused with, or 0 when admitted.
int Refusal(const http::Admission& admission) {
  return admission.refusal ? admission.refusal->status : 0;
}

TokenCheck Token(std::string token) {
  return [token = std::move(token)](absl::optional<absl::string_view> authorization) {
    return authorization && *authorization == "Bearer " + token;
  };
}

struct Case {
  std::string name;
  http::Request head;
  int refusal;  // 0: admitted
};

TEST(AdmissionTest, BrowserRequestsAreRefusedAndControllersAdmitted) {
  AdmissionPolicy policy;
  policy.allowed_origins = {"https://console.example"};
  policy.allowed_hosts = {"hawk.internal"};
  const std::string json = "application/json";
  std::vector<Case> cases = {
      {"Controller", Head("GET", "/v1/state", {{"Host", "127.0.0.1:9000"}}), 0},
      {"ControllerPut",
       Head("PUT", "/v1/state",
            {{"Host", "127.0.0.1"}, {"Content-Type", json}, {"Content-Length", "10"}}),
       0},
      {"JsonWithCharset",
       Head("PUT", "/v1/state",
            {{"Host", "localhost"},
             {"Content-Type", "Application/JSON ; charset=utf-8"},
             {"Content-Length", "10"}}),
       0},
      {"NoBodyNoType",
       Head("POST", "/v1/reload", {{"Host", "[::1]:9000"}, {"Content-Length", "0"}}), 0},
      // A simple cross-origin POST, the kind a page sends without a preflight.
      {"CrossOriginTextPlain",
       Head("POST", "/v1/reload",
            {{"Host", "127.0.0.1:9000"},
             {"Origin", "http://evil.example"},
             {"Content-Type", "text/plain"},
             {"Content-Length", "40"}}),
       403},
      {"CrossOriginJsonGet",
       Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Origin", "http://evil.example"}}), 403},
      {"OriginNull", Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Origin", "null"}}), 403},
      {"OriginEmpty", Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Origin", ""}}), 403},
      {"AllowedOrigin",
       Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Origin", "https://CONSOLE.example"}}), 0},
      {"AllowedOriginOtherPort",
       Head("GET", "/v1/state",
            {{"Host", "127.0.0.1"}, {"Origin", "https://console.example:8443"}}),
       403},
      {"SecondOriginHeader",
       Head("GET", "/v1/state",
            {{"Host", "127.0.0.1"},
             {"Origin", "https://console.example"},
             {"origin", "http://evil.example"}}),
       403},
      // DNS rebinding: the page's own name in Host.
      {"RebindHost", Head("GET", "/v1/state", {{"Host", "evil.example:9000"}}), 403},
      {"RebindHostNoPort", Head("GET", "/v1/state", {{"Host", "rebind.evil.example"}}), 403},
      {"LocalhostSubdomain", Head("GET", "/v1/state", {{"Host", "x.localhost"}}), 403},
      {"AllowedHost", Head("GET", "/v1/state", {{"Host", "Hawk.Internal.:9000"}}), 0},
      {"LocalhostUpper", Head("GET", "/v1/state", {{"Host", "LOCALHOST"}}), 0},
      {"EmptyHost", Head("GET", "/v1/state", {{"Host", ""}}), 403},
      {"BadPort", Head("GET", "/v1/state", {{"Host", "127.0.0.1:http"}}), 403},
      {"HugePort", Head("GET", "/v1/state", {{"Host", "127.0.0.1:123456"}}), 403},
      {"Ipv6NoBrackets", Head("GET", "/v1/state", {{"Host", "::1"}}), 403},
      {"Ipv6BadTail", Head("GET", "/v1/state", {{"Host", "[::1]x"}}), 403},
      {"ShortIpv4", Head("GET", "/v1/state", {{"Host", "127.1"}}), 403},
      {"SecondHostHeader",
       Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Host", "evil.example"}}), 403},
      {"AbsoluteFormEvil", Head("GET", "http://evil.example/v1/state", {{"Host", "127.0.0.1"}}),
       403},
      {"AbsoluteFormUserinfo",
       Head("GET", "http://127.0.0.1@evil.example/v1/state", {{"Host", "127.0.0.1"}}), 403},
      {"AbsoluteFormLocal", Head("GET", "http://127.0.0.1:9000/v1/state", {{"Host", "127.0.0.1"}}),
       0},
      {"NoHost", Head("GET", "/v1/state", {}), 0},
      // Bodies that are not JSON: forms, text, or no type at all (a Blob).
      {"TextPlain",
       Head("PUT", "/v1/state",
            {{"Host", "127.0.0.1"}, {"Content-Type", "text/plain"}, {"Content-Length", "2"}}),
       415},
      {"Form",
       Head("PUT", "/v1/state",
            {{"Host", "127.0.0.1"},
             {"Content-Type", "application/x-www-form-urlencoded"},
             {"Content-Length", "2"}}),
       415},
      {"Multipart",
       Head("POST", "/v1/reload",
            {{"Host", "127.0.0.1"},
             {"Content-Type", "multipart/form-data; boundary=x"},
             {"Content-Length", "2"}}),
       415},
      {"NoContentType", Head("PUT", "/v1/state", {{"Host", "127.0.0.1"}, {"Content-Length", "2"}}),
       415},
      {"Chunked",
       Head("PUT", "/v1/state", {{"Host", "127.0.0.1"}, {"Transfer-Encoding", "chunked"}}), 415},
      {"JsonLookalike",
       Head(
           "PUT", "/v1/state",
           {{"Host", "127.0.0.1"}, {"Content-Type", "application/jsonp"}, {"Content-Length", "2"}}),
       415},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Refusal(Admit(policy, nullptr, c.head)), c.refusal) << c.name;
  }
}

TEST(AdmissionTest, TheHostRuleDoesNotApplyOnAUnixSocket) {
  AdmissionPolicy policy;
  policy.check_host = false;
  EXPECT_EQ(Refusal(Admit(policy, nullptr, Head("GET", "/v1/state", {{"Host", "hawk"}}))), 0);
  EXPECT_EQ(Refusal(Admit(policy, nullptr,
                          Head("GET", "/v1/state", {{"Host", "hawk"}, {"Origin", "http://a.b"}}))),
            403);
  EXPECT_EQ(Refusal(Admit(policy, nullptr,
                          Head("PUT", "/v1/state", {{"Host", "hawk"}, {"Content-Length", "5"}}))),
            415);
}

TEST(AdmissionTest, TheTokenIsCheckedOnTheHeadAndProvesTheConnection) {
  AdmissionPolicy policy;
  TokenCheck token = Token("s3cret");
  http::Admission anonymous = Admit(policy, token,
                                    Head("PUT", "/v1/state",
                                         {{"Host", "127.0.0.1"},
                                          {"Content-Type", "application/json"},
                                          {"Content-Length", "33554432"},
                                          {"Expect", "100-continue"}}));
  ASSERT_EQ(Refusal(anonymous), 401);
  EXPECT_FALSE(anonymous.proves_peer);
  EXPECT_THAT(anonymous.refusal->headers,
              ::testing::Contains(std::make_pair(std::string("WWW-Authenticate"),
                                                 std::string("Bearer realm=\"hawk\""))));
  http::Admission wrong =
      Admit(policy, token,
            Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Authorization", "Bearer x"}}));
  ASSERT_EQ(Refusal(wrong), 401);
  EXPECT_THAT(wrong.refusal->body, HasSubstr("not the one"));
  EXPECT_THAT(wrong.refusal->body, ::testing::Not(HasSubstr("s3cret")));
  http::Admission right =
      Admit(policy, token,
            Head("GET", "/v1/state", {{"Host", "127.0.0.1"}, {"Authorization", "Bearer s3cret"}}));
  EXPECT_EQ(Refusal(right), 0);
  EXPECT_TRUE(right.proves_peer);
  // The token does not excuse a page: a cross-origin request is refused before it is looked at.
  EXPECT_EQ(Refusal(Admit(policy, token,
                          Head("GET", "/v1/state",
                               {{"Host", "127.0.0.1"},
                                {"Origin", "http://evil.example"},
                                {"Authorization", "Bearer s3cret"}}))),
            403);
  // Nor a body that is not JSON; without the token, the client learns only that it needs one.
  EXPECT_EQ(Refusal(Admit(policy, token,
                          Head("PUT", "/v1/state",
                               {{"Host", "127.0.0.1"},
                                {"Authorization", "Bearer s3cret"},
                                {"Content-Type", "text/plain"},
                                {"Content-Length", "3"}}))),
            415);
  EXPECT_EQ(
      Refusal(Admit(
          policy, token,
          Head("PUT", "/v1/state",
               {{"Host", "127.0.0.1"}, {"Content-Type", "text/plain"}, {"Content-Length", "3"}}))),
      401);
}

TEST(AdmissionTest, RefusalsAreJsonErrorsThatNameTheHeader) {
  AdmissionPolicy policy;
  http::Admission origin =
      Admit(policy, nullptr, Head("GET", "/", {{"Host", "127.0.0.1"}, {"Origin", "http://e.x"}}));
  ASSERT_TRUE(origin.refusal);
  EXPECT_EQ(origin.refusal->content_type, "application/json");
  EXPECT_THAT(origin.refusal->body, HasSubstr(R"("code":"PERMISSION_DENIED")"));
  EXPECT_THAT(origin.refusal->body, HasSubstr(R"("field":"Origin")"));
  EXPECT_THAT(origin.refusal->body, HasSubstr("--allowed-origin"));
  http::Admission host = Admit(policy, nullptr, Head("GET", "/", {{"Host", "evil.example"}}));
  ASSERT_TRUE(host.refusal);
  EXPECT_THAT(host.refusal->body, HasSubstr(R"("field":"Host")"));
  EXPECT_THAT(host.refusal->body, HasSubstr("--allowed-host"));
  http::Admission type =
      Admit(policy, nullptr, Head("PUT", "/", {{"Host", "127.0.0.1"}, {"Content-Length", "1"}}));
  ASSERT_TRUE(type.refusal);
  EXPECT_THAT(type.refusal->body, HasSubstr(R"("field":"Content-Type")"));
}

TEST(AdmissionTest, OperatorAllowancesAreCheckedAndNormalized) {
  EXPECT_EQ(*ParseAllowedOrigin("https://Console.Example"), "https://console.example");
  EXPECT_EQ(*ParseAllowedOrigin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(*ParseAllowedOrigin("http://[::1]:8080"), "http://[::1]:8080");
  for (const char* bad :
       {"null", "console.example", "https://console.example/", "https://console.example/app",
        "ftp://x.example", "https://", "https://a.example:port", "https://[::1", "https://a b"}) {
    absl::StatusOr<std::string> parsed = ParseAllowedOrigin(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_THAT(parsed.status().message(), HasSubstr("--allowed-origin")) << bad;
    }
  }
  EXPECT_EQ(*ParseAllowedHost("Hawk.Internal."), "hawk.internal");
  for (const char* bad : {"", ".", "hawk.internal:9000", "http://hawk", "*.example", "a b"}) {
    absl::StatusOr<std::string> parsed = ParseAllowedHost(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_THAT(parsed.status().message(), HasSubstr("--allowed-host")) << bad;
    }
  }
}

}  // namespace
}  // namespace hawk::api
