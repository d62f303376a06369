// hawk: keeps every HAProxy worker — the current one and the leaving ones — in the runtime
// state a controller asked for, through HAProxy's master CLI. This file is the only place that
// defines flags; it turns them into app::Config and runs the loop.

#include <malloc.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/api/authentication.h"
#include "agent/app/app.h"
#include "agent/base/address.h"
#include "agent/base/build_info.h"
#include "agent/base/log.h"
#include "agent/status/apply_main.h"
#include "agent/status/status_main.h"
#include "agent/store/journal.h"
#include "agent/tls/server_context.h"
#include "agent/uv/loop.h"
#include "agent/uv/signal.h"

ABSL_FLAG(std::string, master_socket, "",
          "HAProxy's master CLI socket (haproxy -W -S <path>): a path, unix:PATH or tcp:HOST:PORT");
ABSL_FLAG(std::vector<std::string>, listen, {},
          "Where to serve hawk's API: unix:PATH (created with mode 0600) or tcp:HOST:PORT. A "
          "non-loopback TCP address needs --token-file or --tls-client-ca (and a token needs "
          "TLS there). Repeatable");
ABSL_FLAG(std::vector<std::string>, probe_listen, {},
          "Where to serve only /healthz, /readyz and /metrics (probes and Prometheus), e.g. "
          "tcp:0.0.0.0:8081. Repeatable");
ABSL_FLAG(absl::Duration, poll_interval, absl::Seconds(1),
          "How often to re-read the worker list (reloads are noticed at once anyway)");
ABSL_FLAG(std::string, state_dir, "",
          "Directory where the desired state is persisted before each PUT is acknowledged, and "
          "loaded from at start (created with mode 0700). Empty: memory only");
ABSL_FLAG(uint64_t, state_max_record_bytes, 64 << 20,
          "The largest journal record one push may write to --state-dir (its change, as "
          "persisted): a push whose change needs more is refused with 413, nothing applied. At "
          "most, and by default, 64 MiB (67108864)");
ABSL_FLAG(absl::Duration, resync_interval, absl::Seconds(10),
          "How often every worker is re-observed and repaired (drift behind hawk's back)");
ABSL_FLAG(std::string, workers, "all",
          "Which workers get the desired state: all (current and leaving) or current (only the "
          "current one, as stats-socket controllers do; a baseline for comparisons)");
ABSL_FLAG(std::string, haproxy_config, "",
          "HAProxy's configuration file. POST /v1/reload may carry a new one: hawk writes it "
          "there atomically (the previous one kept as <path>.previous, and restored if the reload "
          "fails). Also read for configuration advice (warnings in /v1/workers) and for `grace`: "
          "on HAProxy before 3.0 hawk relays commands to a leaving worker only within its grace");
ABSL_FLAG(std::string, haproxy_binary, "",
          "The haproxy binary, to validate a configuration with `haproxy -c -f` before each "
          "reload (its output is returned). Empty: no check");
ABSL_FLAG(std::string, server_state_file, "",
          "Before each reload, write the desired server state here in `show servers state` "
          "format, for HAProxy's server-state-file/load-server-state-from-file. Empty: not "
          "written");
ABSL_FLAG(bool, write_servers, true,
          "Before each reload through hawk, write the desired address, port, weight and state of "
          "every managed server into --haproxy-config (its `server` line; a `server-template` "
          "holding a managed slot is expanded into `server` lines between two marker comments "
          "that keep the template), so that the new worker is born holding them instead of the "
          "configuration's placeholders. What the configuration cannot carry (a hostname, "
          "DRAIN) is named in the reload's log. false: the configuration is written only when a "
          "reload carries one");
ABSL_FLAG(bool, write_map_files, true,
          "Before each reload, write the desired content of every map and ACL hawk manages to its "
          "file, atomically, keeping the file's mode, owner and group, so that the new worker is "
          "born holding it and gets only later changes over the CLI. Only a file the current "
          "worker loaded that table from (as `show map`/`show acl` list it), an existing regular "
          "file inside --table-files-dir reached without a symlink, outside --state-dir; a "
          "symlink (a mounted ConfigMap's) is never replaced. Every table not written, and why, "
          "is in the reload's log; a table a file cannot carry (a key with a blank, say) is left "
          "to the CLI. false: map and ACL files are never written");
ABSL_FLAG(std::string, table_files_dir, "",
          "The directory inside which --write-map-files may replace map and ACL files (and "
          "nowhere else). Empty: the directory of --haproxy-config; without either, no such file "
          "is written");
ABSL_FLAG(std::string, worker_socket, "",
          "A `stats socket` of HAProxy's workers (level admin): a path, unix:PATH or "
          "tcp:HOST:PORT. The current worker is then reached through it (each connection first "
          "asks `show info` which worker it reached; after a reload the socket belongs to the new "
          "worker), leaving workers through the master. Empty: everything through the master");
ABSL_FLAG(absl::Duration, min_reload_interval, absl::ZeroDuration(),
          "The least time between the starts of two reloads; requests in between coalesce");
ABSL_FLAG(absl::Duration, reload_timeout, absl::Seconds(60),
          "How long a reload may take before it is reported as timed out");
ABSL_FLAG(std::string, token_file, "",
          "A file holding the bearer token that TCP --listen addresses require (`Authorization: "
          "Bearer <token>`; 401 without it), e.g. a mounted Kubernetes Secret: re-read when it "
          "changes. The unix socket (mode 0600) and the probes need no token. On a non-loopback "
          "address it needs TLS (--tls-cert) or --allow-plaintext-token");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate (then its chain) for TLS 1.3 on TCP --listen addresses; re-read when "
          "it changes. Needs --tls-key");
ABSL_FLAG(std::string, tls_key, "", "PEM private key (unencrypted) of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM bundle of the CAs that sign controllers' client certificates (mTLS): a client "
          "without a valid certificate never reaches HTTP. Needs --tls-cert");
ABSL_FLAG(std::vector<std::string>, tls_client_allow, {},
          "A client identity let in by mTLS: a DNS name or a URI (e.g. a SPIFFE ID) that a client "
          "certificate's subjectAltName must carry, besides being signed by --tls-client-ca. "
          "Repeatable; none: any certificate the CA signed");
ABSL_FLAG(bool, allow_plaintext_token, false,
          "Serve --token-file's bearer token on a non-loopback TCP --listen address without TLS, "
          "where anyone on the path can read it. Without this flag hawk refuses to start so");
ABSL_FLAG(std::vector<std::string>, allowed_origin, {},
          "An origin (scheme://host[:port]) whose web pages may call the API; a request with any "
          "other Origin header is refused with 403. Repeatable; none: no web page may");
ABSL_FLAG(std::vector<std::string>, allowed_host, {},
          "A DNS name clients may reach a TCP listener by (its Host header); IP addresses and "
          "localhost always may, any other name gets 403 (DNS rebinding). Repeatable");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warn or error");

namespace {

// Two rewrites before abseil parses the command line:
//  - hawk's flags are spelled with dashes (--master-socket); abseil names them with underscores,
//    so dashes in flag names become underscores (values are left alone);
//  - abseil replaces a flag's value on every occurrence, but --listen, --probe-listen,
//    --tls-client-allow, --allowed-origin and --allowed-host are repeatable: their occurrences
//    are merged into one comma-separated value.
std::vector<std::string> NormalizeArgs(int argc, char** argv) {
  const std::vector<std::string> repeatable = {"listen", "probe_listen", "tls_client_allow",
                                               "allowed_origin", "allowed_host"};
  std::vector<std::string> out;
  std::vector<std::vector<std::string>> values(repeatable.size());
  std::vector<size_t> slot(repeatable.size(), std::string::npos);
  bool flags_ended = false;  // after `--`, every argument is passed on as it is
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") flags_ended = true;
    if (i == 0 || flags_ended || !absl::StartsWith(arg, "--")) {
      out.push_back(arg);
      continue;
    }
    size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::replace(name.begin(), name.end(), '-', '_');
    auto it = std::find(repeatable.begin(), repeatable.end(), name);
    if (it == repeatable.end()) {
      out.push_back(absl::StrCat("--", name, eq == std::string::npos ? "" : arg.substr(eq)));
      continue;
    }
    size_t n = static_cast<size_t>(it - repeatable.begin());
    if (eq != std::string::npos) {
      values[n].push_back(arg.substr(eq + 1));
    } else if (i + 1 < argc) {
      values[n].push_back(argv[++i]);
    }
    if (slot[n] == std::string::npos) {
      slot[n] = out.size();
      out.emplace_back();
    }
  }
  for (size_t n = 0; n < repeatable.size(); ++n) {
    if (slot[n] != std::string::npos) {
      out[slot[n]] = absl::StrCat("--", repeatable[n], "=", absl::StrJoin(values[n], ","));
    }
  }
  return out;
}

// Whether the command line asks for help in any of abseil's spellings (--help, --helpfull,
// --helpshort, --helppackage, --help=…, --helpon=…, with one dash or two), before a `--`.
bool AsksForHelp(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    std::string arg = args[i];
    if (absl::StartsWith(arg, "-") && !absl::StartsWith(arg, "--")) arg = "-" + arg;  // -help
    if (arg == "--help" || arg == "--helpfull" || arg == "--helpshort" || arg == "--helppackage" ||
        absl::StartsWith(arg, "--help=") || absl::StartsWith(arg, "--helpon=")) {
      return true;
    }
  }
  return false;
}

// hawk's flags (those this file defines), spelled as the README spells them, with their help
// and default, in name order. Through abseil's public reflection API.
void PrintHelp(std::ostream& out) {
  out << hawk::base::VersionLine() << ": " << absl::ProgramUsageMessage() << "\n\nFlags:\n";
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), "agent/main.cc")) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  for (const absl::CommandLineFlag* flag : flags) {
    std::string name(flag->Name());
    std::replace(name.begin(), name.end(), '_', '-');
    out << "  --" << name << "  " << flag->Help() << " (default: \"" << flag->DefaultValue()
        << "\")\n";
  }
}

absl::StatusOr<hawk::app::Config> ConfigFromFlags() {
  hawk::app::Config config;
  std::string master = absl::GetFlag(FLAGS_master_socket);
  if (master.empty()) return absl::InvalidArgumentError("--master-socket is required");
  absl::StatusOr<hawk::base::Address> master_address =
      hawk::base::ParseAddress(master, "--master-socket");
  if (!master_address.ok()) return master_address.status();
  config.master_socket = *master_address;
  for (const std::string& text : absl::GetFlag(FLAGS_listen)) {
    absl::StatusOr<hawk::base::Address> address = hawk::base::ParseAddress(text, "--listen");
    if (!address.ok()) return address.status();
    config.listen.push_back(*address);
  }
  for (const std::string& text : absl::GetFlag(FLAGS_probe_listen)) {
    absl::StatusOr<hawk::base::Address> address = hawk::base::ParseAddress(text, "--probe-listen");
    if (!address.ok()) return address.status();
    config.probe_listen.push_back(*address);
  }
  if (config.listen.empty()) {
    return absl::InvalidArgumentError("at least one --listen address is required");
  }
  config.token_file = absl::GetFlag(FLAGS_token_file);
  config.tls.cert = absl::GetFlag(FLAGS_tls_cert);
  config.tls.key = absl::GetFlag(FLAGS_tls_key);
  config.tls.client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  if (config.tls.cert.empty() != config.tls.key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both or neither");
  }
  if (!config.tls.client_ca.empty() && config.tls.cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked in a "
        "TLS handshake");
  }
  for (const std::string& text : absl::GetFlag(FLAGS_tls_client_allow)) {
    absl::StatusOr<std::string> entry = hawk::tls::ParseClientAllow(text);
    if (!entry.ok()) return entry.status();
    config.tls_client_allow.push_back(*std::move(entry));
  }
  if (!config.tls_client_allow.empty() && config.tls.client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-allow needs --tls-client-ca: the identities are read from client "
        "certificates the CA signed");
  }
  for (const std::string& text : absl::GetFlag(FLAGS_allowed_origin)) {
    absl::StatusOr<std::string> origin = hawk::api::ParseAllowedOrigin(text);
    if (!origin.ok()) return origin.status();
    config.allowed_origins.push_back(*std::move(origin));
  }
  for (const std::string& text : absl::GetFlag(FLAGS_allowed_host)) {
    absl::StatusOr<std::string> host = hawk::api::ParseAllowedHost(text);
    if (!host.ok()) return host.status();
    config.allowed_hosts.push_back(*std::move(host));
  }
  bool authenticates = !config.token_file.empty() || !config.tls.client_ca.empty();
  for (const hawk::base::Address& address : config.listen) {
    // The API changes what every worker routes to: from another host, only with a credential.
    if (!hawk::base::IsLoopback(address) && !authenticates) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen ", address.ToString(),
                       ": a non-loopback address serves the API to other hosts and needs "
                       "authentication: give --token-file, or --tls-client-ca with --tls-cert "
                       "and --tls-key (or listen on a unix socket or 127.0.0.1)"));
    }
    // A token sent in cleartext is a token anyone on the path can replay.
    if (!hawk::base::IsLoopback(address) && !config.token_file.empty() && config.tls.cert.empty() &&
        !absl::GetFlag(FLAGS_allow_plaintext_token)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--listen ", address.ToString(),
          ": the bearer token (--token-file) would cross the network in cleartext on every "
          "request: give --tls-cert and --tls-key (TLS 1.3), or pass --allow-plaintext-token to "
          "accept that risk"));
    }
  }
  config.poll_interval = absl::GetFlag(FLAGS_poll_interval);
  if (config.poll_interval < absl::Milliseconds(10) || config.poll_interval > absl::Hours(1)) {
    return absl::InvalidArgumentError("--poll-interval must be between 10ms and 1h");
  }
  config.state_dir = absl::GetFlag(FLAGS_state_dir);
  config.state_max_record_bytes = absl::GetFlag(FLAGS_state_max_record_bytes);
  if (config.state_max_record_bytes < 1024 ||
      config.state_max_record_bytes > hawk::store::JournalOptions{}.max_record_bytes) {
    // Not above the journal's own limit: that also bounds what is read back at start.
    return absl::InvalidArgumentError(absl::StrCat(
        "--state-max-record-bytes must be between 1024 and ",
        hawk::store::JournalOptions{}.max_record_bytes, ", got ", config.state_max_record_bytes));
  }
  config.resync_interval = absl::GetFlag(FLAGS_resync_interval);
  if (config.resync_interval < absl::Milliseconds(100) ||
      config.resync_interval > absl::Hours(24)) {
    return absl::InvalidArgumentError("--resync-interval must be between 100ms and 24h");
  }
  std::string workers = absl::GetFlag(FLAGS_workers);
  if (workers == "all") {
    config.leaving_workers = true;
  } else if (workers == "current") {
    config.leaving_workers = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers: \"", workers, "\" is not one of all, current"));
  }
  config.haproxy_config = absl::GetFlag(FLAGS_haproxy_config);
  config.haproxy_binary = absl::GetFlag(FLAGS_haproxy_binary);
  config.server_state_file = absl::GetFlag(FLAGS_server_state_file);
  config.write_table_files = absl::GetFlag(FLAGS_write_map_files);
  config.write_servers = absl::GetFlag(FLAGS_write_servers);
  config.table_files_dir = absl::GetFlag(FLAGS_table_files_dir);
  if (std::string worker_socket = absl::GetFlag(FLAGS_worker_socket); !worker_socket.empty()) {
    absl::StatusOr<hawk::base::Address> address =
        hawk::base::ParseAddress(worker_socket, "--worker-socket");
    if (!address.ok()) return address.status();
    config.worker_socket = *address;
  }
  config.min_reload_interval = absl::GetFlag(FLAGS_min_reload_interval);
  if (config.min_reload_interval < absl::ZeroDuration() ||
      config.min_reload_interval > absl::Hours(1)) {
    return absl::InvalidArgumentError("--min-reload-interval must be between 0 and 1h");
  }
  config.reload_timeout = absl::GetFlag(FLAGS_reload_timeout);
  if (config.reload_timeout < absl::Seconds(1) || config.reload_timeout > absl::Hours(1)) {
    return absl::InvalidArgumentError("--reload-timeout must be between 1s and 1h");
  }
  std::string level = absl::GetFlag(FLAGS_log_level);
  if (level == "debug") {
    hawk::base::SetLogLevel(hawk::base::LogLevel::kDebug);
  } else if (level == "info") {
    hawk::base::SetLogLevel(hawk::base::LogLevel::kInfo);
  } else if (level == "warn") {
    hawk::base::SetLogLevel(hawk::base::LogLevel::kWarn);
  } else if (level == "error") {
    hawk::base::SetLogLevel(hawk::base::LogLevel::kError);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: \"", level, "\" is not one of debug, info, warn, error"));
  }
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  // `hawk status …`: a person's view of a running hawk (agent/status), not the daemon.
  if (argc > 1 && std::string_view(argv[1]) == "status") {
    return hawk::status::StatusMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string_view(argv[1]) == "apply") {
    return hawk::status::ApplyMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string_view(argv[1]) == "get") {
    return hawk::status::GetMain(argc - 1, argv + 1);
  }
  // Memory: a whole-state PUT at ingress scale allocates a few tens of megabytes (the body, the
  // parser's buffers, the new state) and frees them again. Fresh pages cost ~10 µs each to touch
  // on the VMs hawk runs on, so malloc keeps that memory for the next PUT (big blocks come from
  // the heap, which free does not trim), and app::MemoryTrimmer gives it back (malloc_trim) once
  // large work stops coming. glibc's default would hand out big blocks as fresh mappings (slow)
  // and then raise its threshold so that they stay in the heap for good (RSS that never goes down).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  // One extra arena is enough: only the loop thread and libuv's threadpool (compaction) allocate.
  ::mallopt(M_ARENA_MAX, 2);
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "agent/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  // --version (handled by ParseCommandLine, exit 0): hawk's version and commit. abseil's default
  // names the program and, because Debian builds abseil without NDEBUG, says "Debug build".
  usage.version_string = [] { return hawk::base::VersionLine() + "\n"; };
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(
      "keeps every HAProxy worker (current and leaving) in the desired runtime state.\n"
      "Usage: hawk --master-socket /run/haproxy-master.sock --listen unix:/run/hawk.sock "
      "[--probe-listen tcp:0.0.0.0:8081]\n"
      "Flags may be spelled with dashes or underscores (--master-socket, --master_socket).");
  std::vector<std::string> merged = NormalizeArgs(argc, argv);
  // abseil exits with 1 after its help flags; asking for help is not an error.
  if (AsksForHelp(merged)) {
    PrintHelp(std::cout);
    return 0;
  }
  std::vector<char*> merged_argv;
  for (std::string& arg : merged) merged_argv.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(merged_argv.size()), merged_argv.data());
  if (positional.size() > 1) {  // [0] is the program
    std::fprintf(stderr, "hawk: unexpected argument \"%s\": hawk takes flags only (see --help)\n",
                 positional[1]);
    return 2;
  }

  absl::StatusOr<hawk::app::Config> config = ConfigFromFlags();
  if (!config.ok()) {
    std::fprintf(stderr, "hawk: %s (see --help)\n", std::string(config.status().message()).c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away is an error return, not a signal

  hawk::uv::Loop loop;
  absl::StatusOr<std::unique_ptr<hawk::app::App>> app = hawk::app::App::Create(&loop, *config);
  if (!app.ok()) {
    std::fprintf(stderr, "hawk: %s\n", std::string(app.status().message()).c_str());
    (void)loop.RunDryAndClose();
    return 1;
  }
  std::unique_ptr<hawk::app::App> running = *std::move(app);
  auto sigterm = std::make_unique<hawk::uv::Signal>(loop.get());
  auto sigint = std::make_unique<hawk::uv::Signal>(loop.get());
  auto sighup = std::make_unique<hawk::uv::Signal>(loop.get());
  auto shutdown = [&](int signum) {
    hawk::base::LogInfo("signal ", signum, ": shutting down");
    running.reset();
    sigterm.reset();  // safe inside its own callback: uv::Signal runs a copy of the callback
    sigint.reset();
    sighup.reset();
  };
  sigterm->Start(SIGTERM, shutdown);
  sigint->Start(SIGINT, shutdown);
  // SIGHUP's default action ends the process: a terminal that closes, or an operator who expects
  // "reload your configuration", must not take hawk (and the state it serves) away. hawk's
  // configuration is its flags; the files it reads (token, TLS) are re-read when they change.
  sighup->Start(SIGHUP, [](int) {
    hawk::base::LogInfo(
        "SIGHUP: ignored; hawk is configured by its flags (restart to change them), and re-reads "
        "its token and TLS files when they change");
  });
  loop.Run();
  absl::Status closed = loop.RunDryAndClose();
  if (!closed.ok()) {
    hawk::base::LogError("shutdown: ", closed.message());
    return 1;
  }
  hawk::base::LogInfo("stopped cleanly");
  return 0;
}
