#include "agent/status/status_main.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/address.h"
#include "agent/status/endpoint_flags.h"
#include "agent/status/status_client.h"
#include "agent/status/status_text.h"

namespace hawk::status {
namespace {

constexpr const char* kUsage =
    "usage: hawk status [--json] [--watch] [--token-file PATH] [ADDRESS]\n"
    "  ADDRESS  hawk's --listen: unix:PATH, a path, or tcp:HOST:PORT (default "
    "unix:/run/hawk/hawk.sock)\n"
    "  --watch  redraw on every change\n"
    "  --json   print the report as hawk sends it\n"
    "  --token-file PATH  the bearer token of a TCP listener started with --token-file\n";

void Fail(absl::string_view message) {
  std::fprintf(stderr, "hawk status: %.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace

int StatusMain(int argc, char** argv) {
  bool json = false;
  bool watch = false;
  std::string address_text = kDefaultAddress;
  bool address_given = false;
  std::string token_file;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--token-file" && i + 1 < argc) {
      token_file = argv[++i];
    } else if (absl::StartsWith(arg, "--token-file=")) {
      token_file = std::string(arg.substr(std::strlen("--token-file=")));
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--watch") {
      watch = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (absl::StartsWith(arg, "-") || address_given) {
      std::fprintf(stderr, "hawk status: unexpected argument \"%s\"\n%s", argv[i], kUsage);
      return 2;
    } else {
      address_text = std::string(arg);
      address_given = true;
    }
  }
  absl::StatusOr<base::Address> address = base::ParseAddress(address_text, "ADDRESS");
  if (!address.ok()) {
    std::fprintf(stderr, "hawk status: %s\n%s", std::string(address.status().message()).c_str(),
                 kUsage);
    return 2;
  }
  Endpoint endpoint{*address, ""};
  if (!token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (!token.ok()) {
      Fail(token.status().message());
      return 2;
    }
    endpoint.bearer_token = *std::move(token);
  }
  RenderOptions options;
  options.color = ::isatty(STDOUT_FILENO) == 1;

  if (!watch) {
    absl::StatusOr<std::string> body = Get(endpoint, "/v1/workers", absl::Seconds(5));
    if (!body.ok()) {
      Fail(body.status().message());
      return 1;
    }
    if (json) {
      std::fputs(body->c_str(), stdout);
      std::fputs("\n", stdout);
      return 0;
    }
    absl::StatusOr<std::string> screen = RenderReport(*body, options);
    if (!screen.ok()) {
      Fail(screen.status().message());
      return 1;
    }
    std::fputs(screen->c_str(), stdout);
    return 0;
  }

  std::string error;
  absl::Status streamed = Stream(endpoint, "/v1/watch", [&](absl::string_view line) {
    // {"report":{…}} on every change, {"heartbeat":"…"} in between.
    constexpr absl::string_view kPrefix = "{\"report\":";
    if (!absl::StartsWith(line, kPrefix) || !absl::EndsWith(line, "}")) return true;
    absl::string_view report = line.substr(kPrefix.size(), line.size() - kPrefix.size() - 1);
    if (json) {
      std::fwrite(report.data(), 1, report.size(), stdout);
      std::fputs("\n", stdout);
      std::fflush(stdout);
      return true;
    }
    absl::StatusOr<std::string> screen = RenderReport(report, options);
    if (!screen.ok()) {
      error = std::string(screen.status().message());
      return false;
    }
    // A terminal is redrawn in place; anything else gets one screen after another.
    std::fputs(options.color ? "\x1b[H\x1b[2J" : "\n", stdout);
    std::fputs(screen->c_str(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!error.empty()) {
    Fail(error);
    return 1;
  }
  if (!streamed.ok()) {
    Fail(streamed.message());
    return 1;
  }
  return 0;
}

}  // namespace hawk::status
