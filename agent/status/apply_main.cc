#include "agent/status/apply_main.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/status/apply_text.h"
#include "agent/status/endpoint_flags.h"
#include "agent/status/status_client.h"

namespace hawk::status {
namespace {

constexpr const char* kApplyUsage =
    "usage: hawk apply [--dry-run] [--patch] [--json] [--timeout-ms N] [--token-file PATH]\n"
    "                  [--address ADDRESS] FILE|-\n"
    "  FILE|-        the desired state (JSON, as PUT /v1/state takes it); - reads stdin\n"
    "  --patch       send it as a patch (PATCH /v1/state)\n"
    "  --dry-run     ask hawk what it would do (?dryRun=true), changing nothing\n"
    "  --json        print hawk's answer as it sends it\n"
    "  --timeout-ms  how long hawk waits for the workers to apply it (hawk's default: 2000)\n"
    "  --address     hawk's --listen: unix:PATH, a path, or tcp:HOST:PORT (default "
    "unix:/run/hawk/hawk.sock)\n"
    "  --token-file  the bearer token of a TCP listener started with --token-file\n"
    "exit: 0 every worker APPLIED it, 3 hawk kept it but not every worker applied it,\n"
    "      1 hawk unreachable or refused it, 2 usage; --dry-run: 0 nothing would stay stale or\n"
    "      be refused, 3 something would\n";
constexpr const char* kGetUsage =
    "usage: hawk get state [--token-file PATH] [ADDRESS]\n"
    "  prints the desired state hawk holds (GET /v1/state)\n";

void Fail(absl::string_view command, absl::string_view message) {
  std::fprintf(stderr, "hawk %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
}

// `--name VALUE` or `--name=VALUE` at argv[*i]; advances *i past a separate value.
bool FlagValue(int argc, char** argv, int* i, absl::string_view name, std::string* value) {
  absl::string_view arg = argv[*i];
  if (arg == name && *i + 1 < argc) {
    *value = argv[++*i];
    return true;
  }
  if (absl::StartsWith(arg, absl::StrCat(name, "="))) {
    *value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  return false;
}

}  // namespace

int ApplyMain(int argc, char** argv) {
  bool dry_run = false, patch = false, json = false;
  std::string address = kDefaultAddress, token_file, timeout_text, file;
  bool file_given = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (FlagValue(argc, argv, &i, "--token-file", &token_file) ||
        FlagValue(argc, argv, &i, "--address", &address) ||
        FlagValue(argc, argv, &i, "--timeout-ms", &timeout_text)) {
      continue;
    } else if (arg == "--dry-run") {
      dry_run = true;
    } else if (arg == "--patch") {
      patch = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kApplyUsage, stdout);
      return 0;
    } else if ((absl::StartsWith(arg, "-") && arg != "-") || file_given) {
      std::fprintf(stderr, "hawk apply: unexpected argument \"%s\"\n%s", argv[i], kApplyUsage);
      return 2;
    } else {
      file = std::string(arg);
      file_given = true;
    }
  }
  int64_t timeout_ms = 2000;
  if (!timeout_text.empty() && (!absl::SimpleAtoi(timeout_text, &timeout_ms) || timeout_ms < 0)) {
    std::fprintf(stderr, "hawk apply: --timeout-ms: not a number of milliseconds: \"%s\"\n%s",
                 timeout_text.c_str(), kApplyUsage);
    return 2;
  }
  if (!file_given) {
    std::fprintf(stderr, "hawk apply: no FILE (- reads stdin)\n%s", kApplyUsage);
    return 2;
  }
  absl::StatusOr<Endpoint> endpoint = MakeEndpoint(address, token_file);
  if (!endpoint.ok()) {
    Fail("apply", endpoint.status().message());
    return 2;
  }
  std::stringstream document;
  if (file == "-") {
    document << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      Fail("apply", absl::StrCat(file, ": cannot read it: ", std::strerror(errno)));
      return 1;
    }
    document << in.rdbuf();
  }
  std::string target = absl::StrCat("/v1/state?timeoutMs=", timeout_ms);
  // A hawk too old to serve dry runs refuses the parameter (400 naming dryRun): never a real push.
  if (dry_run) absl::StrAppend(&target, "&dryRun=true");
  absl::StatusOr<Answer> answer = Send(*endpoint, patch ? "PATCH" : "PUT", target, document.str(),
                                       absl::Milliseconds(timeout_ms) + absl::Seconds(30));
  if (!answer.ok()) {
    Fail("apply", answer.status().message());
    return 1;
  }
  if (answer->status != 200) {
    Fail("apply", absl::StrCat("hawk answered ", answer->status, ": ", answer->body));
    return 1;
  }
  RenderOptions options;
  options.color = ::isatty(STDOUT_FILENO) == 1;
  absl::StatusOr<ApplyView> view = RenderPushAnswer(answer->body, options);
  if (json || !view.ok()) {
    std::fputs(answer->body.c_str(), stdout);
    std::fputs("\n", stdout);
  } else {
    std::fputs(view->text.c_str(), stdout);
  }
  if (!view.ok()) return 1;
  return view->all_applied ? 0 : 3;
}

int GetMain(int argc, char** argv) {
  std::string address = kDefaultAddress, token_file;
  bool what_given = false, address_given = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (FlagValue(argc, argv, &i, "--token-file", &token_file)) continue;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kGetUsage, stdout);
      return 0;
    }
    if (!what_given && arg == "state") {
      what_given = true;
    } else if (what_given && !address_given && !absl::StartsWith(arg, "-")) {
      address = std::string(arg);
      address_given = true;
    } else {
      std::fprintf(stderr, "hawk get: unexpected argument \"%s\"\n%s", argv[i], kGetUsage);
      return 2;
    }
  }
  if (!what_given) {
    std::fputs(kGetUsage, stderr);
    return 2;
  }
  absl::StatusOr<Endpoint> endpoint = MakeEndpoint(address, token_file);
  if (!endpoint.ok()) {
    Fail("get", endpoint.status().message());
    return 2;
  }
  absl::StatusOr<std::string> body = Get(*endpoint, "/v1/state", absl::Seconds(30));
  if (!body.ok()) {
    Fail("get", body.status().message());
    return 1;
  }
  std::fputs(body->c_str(), stdout);
  std::fputs("\n", stdout);
  return 0;
}

}  // namespace hawk::status
