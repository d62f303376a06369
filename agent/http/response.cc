#include "agent/http/response.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "agent/base/json_writer.h"
#include "agent/base/status_field.h"

namespace hawk::http {
namespace {

bool IsFramingHeader(absl::string_view name) {
  return absl::EqualsIgnoreCase(name, "Content-Length") ||
         absl::EqualsIgnoreCase(name, "Transfer-Encoding") ||
         absl::EqualsIgnoreCase(name, "Connection");
}

// Header names and values come from handlers; a CR or LF in them would split the response.
void AppendHeader(std::string* out, absl::string_view name, absl::string_view value) {
  for (absl::string_view part : {name, absl::string_view(": "), value}) {
    for (char c : part) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
  }
  out->append("\r\n");
}

int ValidStatus(int status) { return status >= 100 && status <= 599 ? status : 500; }

void AppendStatusLine(std::string* out, int status) {
  absl::StrAppend(out, "HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
}

void AppendConnection(std::string* out, const Framing& framing) {
  if (!framing.keep_alive) {
    out->append("Connection: close\r\n");
  } else if (framing.http10) {
    out->append("Connection: keep-alive\r\n");
  }
}

struct Reason {
  int status;
  const char* phrase;
};
constexpr Reason kReasons[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Content"},
    {425, "Too Early"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {451, "Unavailable For Legal Reasons"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

}  // namespace

absl::string_view ReasonPhrase(int status) {
  for (const Reason& reason : kReasons) {
    if (reason.status == status) return reason.phrase;
  }
  return "";
}

std::string Serialize(const Response& response, bool keep_alive) {
  Framing framing;
  framing.keep_alive = keep_alive;
  return Serialize(response, framing);
}

std::string Serialize(const Response& response, const Framing& framing) {
  int status = ValidStatus(response.status);
  bool has_body = status >= 200 && status != 204 && status != 304;
  std::string out;
  out.reserve(128 + response.body.size());
  AppendStatusLine(&out, status);
  if (!response.content_type.empty()) AppendHeader(&out, "Content-Type", response.content_type);
  for (const auto& [name, value] : response.headers) {
    if (!IsFramingHeader(name)) AppendHeader(&out, name, value);
  }
  if (has_body) absl::StrAppend(&out, "Content-Length: ", response.body.size(), "\r\n");
  AppendConnection(&out, framing);
  out.append("\r\n");
  if (has_body && !framing.head) out.append(response.body);
  return out;
}

std::string SerializeStreamHead(int status, absl::string_view content_type,
                                const Framing& framing) {
  std::string out;
  AppendStatusLine(&out, ValidStatus(status));
  if (!content_type.empty()) AppendHeader(&out, "Content-Type", content_type);
  if (framing.http10) {
    out.append("Connection: close\r\n");  // the body ends where the connection does
  } else {
    out.append("Transfer-Encoding: chunked\r\n");
    AppendConnection(&out, framing);
  }
  out.append("\r\n");
  return out;
}

std::string EncodeChunk(absl::string_view data) {
  if (data.empty()) return std::string();
  std::string out = absl::StrCat(absl::Hex(data.size()), "\r\n");
  out.reserve(out.size() + data.size() + 2);
  out.append(data.data(), data.size());
  out.append("\r\n");
  return out;
}

Response JsonResponse(int status, std::string body) {
  Response response;
  response.status = status;
  response.content_type = "application/json";
  response.body = std::move(body);
  return response;
}

void WriteErrorMember(absl::string_view code, absl::string_view message, absl::string_view field,
                      base::JsonWriter* w, absl::string_view current_generation) {
  w->Key("error").BeginObject();
  w->Key("code").String(code);
  w->Key("message").String(message);
  if (!field.empty()) w->Key("field").String(field);
  // proto3: int64 as a decimal string.
  if (!current_generation.empty()) w->Key("currentGeneration").String(current_generation);
  w->EndObject();
}

Response JsonError(int status, absl::string_view code, absl::string_view message,
                   absl::string_view field) {
  base::JsonWriter writer;
  writer.BeginObject();
  WriteErrorMember(code, message, field, &writer);
  writer.EndObject();
  return JsonResponse(status, writer.Take());
}

int HttpStatusFromCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return 409;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

Response ErrorFromStatus(const absl::Status& status) {
  if (status.ok()) return JsonError(500, "INTERNAL", "an error was expected but none was given");
  base::JsonWriter writer;
  writer.BeginObject();
  WriteErrorMember(absl::StatusCodeToString(status.code()), status.message(), base::FieldOf(status),
                   &writer, base::CurrentGenerationOf(status).value_or(""));
  writer.EndObject();
  return JsonResponse(HttpStatusFromCode(status.code()), writer.Take());
}

}  // namespace hawk::http
