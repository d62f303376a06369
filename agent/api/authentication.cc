#include "agent/api/authentication.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/http/response.h"

namespace hawk::api {
namespace {

bool IsIpv4Literal(absl::string_view text) {
  in_addr address;
  return !text.empty() && text.size() < 16 &&
         inet_pton(AF_INET, std::string(text).c_str(), &address) == 1;
}

bool IsIpv6Literal(absl::string_view text) {
  in6_addr address;
  return !text.empty() && text.size() < 46 &&
         inet_pton(AF_INET6, std::string(text).c_str(), &address) == 1;
}

bool IsPort(absl::string_view text) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string NormalizeName(absl::string_view name) {
  if (absl::EndsWith(name, ".")) name.remove_suffix(1);
  return absl::AsciiStrToLower(name);
}

bool IsDnsName(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

// The authority of an absolute-form request target ("http://host:port/path"), or nullopt for
// the origin form ("/path") and for anything else.
absl::optional<absl::string_view> AbsoluteFormAuthority(absl::string_view target) {
  if (target.empty() || target[0] == '/') return absl::nullopt;
  size_t scheme_end = target.find("://");
  if (scheme_end == absl::string_view::npos) return absl::nullopt;
  absl::string_view rest = target.substr(scheme_end + 3);
  return rest.substr(0, rest.find_first_of("/?#"));
}

// Whether the request announces a body: a Transfer-Encoding, or a Content-Length above 0 (llhttp
// has already refused malformed and conflicting ones).
bool HasBody(const http::Request& head) {
  for (const auto& [name, value] : head.headers) {
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) return true;
    if (absl::EqualsIgnoreCase(name, "Content-Length")) {
      for (char c : value) {
        if (c != '0') return true;
      }
    }
  }
  return false;
}

bool IsJson(absl::optional<absl::string_view> content_type) {
  if (!content_type) return false;
  absl::string_view media = content_type->substr(0, content_type->find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(media), "application/json");
}

http::Admission Forbidden(absl::string_view message, absl::string_view header) {
  return http::Admission::Refuse(http::JsonError(403, "PERMISSION_DENIED", message, header));
}

}  // namespace

bool HostAllowed(const AdmissionPolicy& policy, absl::string_view host) {
  absl::string_view name = host;
  if (absl::StartsWith(host, "[")) {
    size_t close = host.find(']');
    if (close == absl::string_view::npos) return false;
    absl::string_view after = host.substr(close + 1);
    if (!after.empty() && !(after[0] == ':' && IsPort(after.substr(1)))) return false;
    return IsIpv6Literal(host.substr(1, close - 1));
  }
  if (size_t colon = host.find(':'); colon != absl::string_view::npos) {
    if (!IsPort(host.substr(colon + 1))) return false;
    name = host.substr(0, colon);
  }
  if (IsIpv4Literal(name)) return true;
  if (!IsDnsName(name)) return false;
  std::string normalized = NormalizeName(name);
  if (normalized == "localhost") return true;
  for (const std::string& allowed : policy.allowed_hosts) {
    if (normalized == allowed) return true;
  }
  return false;
}

http::Admission Admit(const AdmissionPolicy& policy, const TokenCheck& token,
                      const http::Request& head) {
  for (const auto& [name, value] : head.headers) {
    if (absl::EqualsIgnoreCase(name, "Origin")) {
      bool allowed = false;
      for (const std::string& origin : policy.allowed_origins) {
        allowed = allowed || absl::EqualsIgnoreCase(value, origin);
      }
      if (!allowed) {
        return Forbidden(
            "requests from web pages are refused: the Origin header names an origin hawk was "
            "not told to allow (--allowed-origin)",
            "Origin");
      }
    }
    if (policy.check_host && absl::EqualsIgnoreCase(name, "Host") && !HostAllowed(policy, value)) {
      return Forbidden(
          "the Host header must be an IP address, localhost or a name given with "
          "--allowed-host: a page whose DNS name resolves to this address does not reach the API",
          "Host");
    }
  }
  if (policy.check_host) {
    absl::optional<absl::string_view> authority = AbsoluteFormAuthority(head.target);
    if (authority && (absl::StrContains(*authority, '@') || !HostAllowed(policy, *authority))) {
      return Forbidden(
          "the request target's host must be an IP address, localhost or a name given with "
          "--allowed-host",
          "Host");
    }
  }
  bool proven = false;
  if (token) {
    absl::optional<absl::string_view> authorization = head.Header("Authorization");
    if (!token(authorization)) {
      http::Response response = http::JsonError(
          401, "UNAUTHENTICATED",
          authorization ? "the bearer token is not the one in hawk's --token-file"
                        : "this listener needs `Authorization: Bearer <token>`, the token in "
                          "hawk's --token-file");
      response.headers.emplace_back("WWW-Authenticate",
                                    authorization ? "Bearer realm=\"hawk\", error=\"invalid_token\""
                                                  : "Bearer realm=\"hawk\"");
      return http::Admission::Refuse(std::move(response));
    }
    proven = true;
  }
  if (HasBody(head) && !IsJson(head.Header("Content-Type"))) {
    return http::Admission::Refuse(http::JsonError(
        415, "INVALID_ARGUMENT",
        "a request body must be JSON: send `Content-Type: application/json`", "Content-Type"));
  }
  return http::Admission::Admit(proven);
}

http::AdmissionCheck MakeAdmissionCheck(AdmissionPolicy policy, TokenCheck token) {
  return [policy = std::move(policy), token = std::move(token)](const http::Request& head) {
    return Admit(policy, token, head);
  };
}

absl::StatusOr<std::string> ParseAllowedOrigin(absl::string_view text) {
  std::string origin = absl::AsciiStrToLower(text);
  absl::string_view rest = origin;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--allowed-origin ", text,
        ": an origin is scheme://host[:port] with scheme http or https (\"null\" is never "
        "allowed: any page can send it)"));
  }
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("--allowed-origin ", text,
                     ": an origin is scheme://host[:port], without a path or a trailing slash"));
  };
  if (absl::StartsWith(rest, "[")) {
    size_t close = rest.find(']');
    if (close == absl::string_view::npos || !IsIpv6Literal(rest.substr(1, close - 1))) {
      return invalid();
    }
    absl::string_view after = rest.substr(close + 1);
    if (!after.empty() && !(after[0] == ':' && IsPort(after.substr(1)))) return invalid();
    return origin;
  }
  absl::string_view host = rest;
  if (size_t colon = rest.find(':'); colon != absl::string_view::npos) {
    if (!IsPort(rest.substr(colon + 1))) return invalid();
    host = rest.substr(0, colon);
  }
  if (!IsIpv4Literal(host) && !IsDnsName(host)) return invalid();
  return origin;
}

absl::StatusOr<std::string> ParseAllowedHost(absl::string_view text) {
  if (!IsDnsName(text) || text == ".") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--allowed-host ", text,
        ": a DNS name (letters, digits, '.', '-'), without a port; IP addresses and localhost "
        "are always allowed"));
  }
  return NormalizeName(text);
}

}  // namespace hawk::api
