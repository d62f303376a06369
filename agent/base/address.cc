#include "agent/base/address.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hawk::base {

std::string Address::ToString() const {
  if (kind == Kind::kUnix) return absl::StrCat("unix:", path);
  if (absl::StrContains(host, ':')) return absl::StrCat("tcp:[", host, "]:", port);
  return absl::StrCat("tcp:", host, ":", port);
}

absl::StatusOr<Address> ParseAddress(absl::string_view text, absl::string_view what) {
  Address address;
  if (absl::ConsumePrefix(&text, "tcp:")) {
    address.kind = Address::Kind::kTcp;
    size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": \"tcp:", text, "\" has no port; expected tcp:HOST:PORT"));
    }
    absl::string_view host = text.substr(0, colon);
    absl::string_view port = text.substr(colon + 1);
    if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": unbalanced '[' in \"", text, "\""));
    }
    uint32_t port_number = 0;
    if (!absl::SimpleAtoi(port, &port_number) || port_number == 0 || port_number > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": port \"", port, "\" is not a number in 1..65535"));
    }
    unsigned char buf[sizeof(struct in6_addr)];
    std::string host_string(host);
    if (inet_pton(AF_INET, host_string.c_str(), buf) != 1 &&
        inet_pton(AF_INET6, host_string.c_str(), buf) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": host \"", host, "\" is not a numeric IPv4 or IPv6 address"));
    }
    address.host = std::move(host_string);
    address.port = static_cast<uint16_t>(port_number);
    return address;
  }
  absl::ConsumePrefix(&text, "unix:");
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty socket path"));
  }
  if (text.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": socket path is ", text.size(),
                                                   " bytes; unix sockets allow at most ",
                                                   sizeof(sockaddr_un::sun_path) - 1));
  }
  address.path = std::string(text);
  return address;
}

bool IsLoopback(const Address& address) {
  if (address.kind == Address::Kind::kUnix) return true;
  in_addr v4;
  if (::inet_pton(AF_INET, address.host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (::inet_pton(AF_INET6, address.host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

}  // namespace hawk::base
