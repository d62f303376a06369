#pragma once

// A pure stand-in for one HAProxy worker behind the master CLI, for the planner's tests. It runs
// the commands commands.h builds the way HAProxy reads them (src/cli.c word splitting and
// unescaping, src/map.c payload parsing and per-entry commands, src/server.c `set server`
// semantics as observed on 2.6.12) and answers `show servers state` / `show map` / `show acl` as
// HAProxy prints them, so that a round trip goes through the real parsers and builders (parse::,
// plan::*FromReply).
//
// Per-entry commands on the live map or ACL (src/map.c, src/pattern.c), replies as HAProxy words
// them (Execute gives the text, Answer adds the LF and the blank line):
//   - `set map <m> <k> <v>` sets every entry with key k ("" on success); "entry not found." when
//     there is none;
//   - `add map <m> <k> <v>` / `add acl <a> <p>` append, duplicates included (HAProxy keeps them);
//   - `del map <m> <k>` / `del acl <a> <p>`: 2.6 removes every entry with that key, 3.4 only the
//     first one (SimOptions::del_removes_first_only); "Key not found." when there is none;
//   - a key starting with "#0x" is read by `set map` and `del map|acl` as an entry reference
//     (`#<pointer>` as `show map` prints it), not as a key: "Malformed identifier. Please use
//     #<id> or <file>." when the rest is not hexadecimal, else the entry at that pointer, or
//     "key or pattern not found." / "Key not found." when there is none.
//
// It also checks what a real master and worker would misread: a line whose last word starts
// with "<<" (a payload on 2.9+), a line ending with "<<" (a payload on 2.6), an unescaped ';'.

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/optional.h"
#include "agent/cli/command.h"
#include "agent/cli/wire.h"
#include "agent/model/desired.h"
#include "agent/parse/reply.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/commands.h"
#include "agent/plan/observed.h"
#include "agent/plan/plan.h"
#include "gtest/gtest.h"

namespace hawk::model {
// Readable gtest failures.
inline void PrintTo(const StaleObject& item, std::ostream* os) {
  *os << "{" << item.object << " " << item.field << ": desired \"" << item.desired
      << "\", actual \"" << item.actual << "\", " << item.reason << "}";
}
}  // namespace hawk::model

namespace hawk::plan {
inline void PrintTo(const Action& action, std::ostream* os) {
  *os << "{" << action.object() << " " << action.field() << "}";
}
}  // namespace hawk::plan

namespace hawk::plan::testing {

// HAProxy's cli_parse_request: words end at an unescaped space or tab; then `\\` → `\` and a
// backslash before any other byte is dropped.
inline std::vector<std::string> SplitCliWords(absl::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::string word;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      if (line[i] == '\\') {
        if (i + 1 == line.size()) break;  // a lone trailing backslash is dropped
        word.push_back(line[i + 1]);
        i += 2;
        continue;
      }
      word.push_back(line[i++]);
    }
    words.push_back(std::move(word));
  }
  return words;
}

// The last word as the master sees it (raw bytes, escapes kept: src/cli.c pcli_parse_request).
inline std::string RawLastWord(absl::string_view line) {
  std::string last;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') i += line[i] == '\\' ? 2 : 1;
    last = std::string(line.substr(start, std::min(i, line.size()) - start));
  }
  return last;
}

// HAProxy prints addresses with inet_ntop: the canonical form. "" when not an IP literal.
inline std::string CanonicalIp(const std::string& text) {
  unsigned char bytes[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, text.c_str(), bytes) == 1) {
    return inet_ntop(AF_INET, bytes, out, sizeof(out));
  }
  if (inet_pton(AF_INET6, text.c_str(), bytes) == 1) {
    return inet_ntop(AF_INET6, bytes, out, sizeof(out));
  }
  return "";
}

struct SimEntry {
  std::string key;
  std::string value;  // unused for ACLs
  friend bool operator==(const SimEntry&, const SimEntry&) = default;
  friend bool operator<(const SimEntry& a, const SimEntry& b) {
    return std::tie(a.key, a.value) < std::tie(b.key, b.value);
  }
};

inline void PrintTo(const SimEntry& entry, std::ostream* os) {
  *os << "{\"" << entry.key << "\", \"" << entry.value << "\"}";
}

struct SimPatternRef {
  std::vector<SimEntry> current;
  int64_t next_version = 0;
  std::map<int64_t, std::vector<SimEntry>> prepared;
};

struct SimOptions {
  // 3.4: `del map|acl` removes only the first entry with the key; 2.6 removes all of them.
  bool del_removes_first_only = false;
};

// The entries of a StringTable, sorted by key.
inline std::vector<SimEntry> SimEntries(const model::StringTable& table) {
  std::vector<SimEntry> out;
  for (const auto& [key, value] : table.Sorted()) {
    out.push_back(SimEntry{std::string(key), std::string(value)});
  }
  return out;
}

class SimWorker {
 public:
  explicit SimWorker(const ObservedWorker& observed, int pid = 4242, SimOptions options = {})
      : pid_(pid), options_(options) {
    for (const auto& [name, backend] : observed.backends) {
      if (backend.present) backends_[name] = backend.servers;
    }
    for (const auto& [name, map] : observed.maps) {
      if (map.present) maps_[name].current = SimEntries(map.entries);
    }
    for (const auto& [name, acl] : observed.acls) {
      if (acl.present) acls_[name].current = SimEntries(acl.entries);
    }
  }

  // What an ObservedTable cannot hold: duplicates, in a given order. Creates the map or ACL.
  void SetMapEntries(const std::string& name, std::vector<SimEntry> entries) {
    maps_[name].current = std::move(entries);
  }
  void SetAclEntries(const std::string& name, std::vector<SimEntry> entries) {
    acls_[name].current = std::move(entries);
  }
  void set_options(SimOptions options) { options_ = options; }

  // A leaving worker after its soft-stop: server commands answer "Proxy is disabled.".
  void set_frozen(bool frozen) { frozen_ = frozen; }

  // Runs one command; the reply as HAProxy words it ("" for a silent success). Misframed
  // commands fail the current test.
  std::string Execute(const cli::Command& command) {
    ++commands_run_;
    absl::Status valid = cli::ValidateCommand(command);
    EXPECT_TRUE(valid.ok()) << valid << ": " << cli::MasterLine(command);
    if (!valid.ok()) return "sim: invalid command";
    std::string serialized = cli::CommandBytes(command, cli::Dialect::kMaster);
    EXPECT_LE(cli::MasterLineBytes(command), cli::kMaxLineBytes);
    if (!command.payload.empty()) {
      EXPECT_LE(serialized.size(), cli::kMaxCommandWithPayloadBytes) << cli::MasterLine(command);
    }
    // Neither the master (2.9+: last word starting with "<<") nor a 2.6 worker (line ending
    // with "<<") may see a payload in a command that has none.
    EXPECT_FALSE(absl::StartsWith(RawLastWord(command.text), "<<")) << command.text;
    EXPECT_FALSE(absl::EndsWith(command.text, "<<")) << command.text;
    EXPECT_TRUE(command.pid == pid_) << command.pid << " " << command.text;
    std::vector<std::string> args = SplitCliWords(command.text);
    args.resize(std::max<size_t>(args.size(), 8));  // HAProxy fills unused slots with ""
    if (args[0] == "set" && args[1] == "server") return SetServer(args);
    if (args[0] == "set" && args[1] == "weight") {
      // `set weight <b>/<s> <w>` is `set server <b>/<s> weight <w>` (src/server.c).
      return SetServer({"set", "server", args[2], "weight", args[3], "", "", ""});
    }
    if (args[0] == "add" && args[1] == "server") return AddServer(args);
    if (args[0] == "del" && args[1] == "server") return DelServer(args);
    if (args[0] == "prepare" && (args[1] == "map" || args[1] == "acl")) return Prepare(args);
    if (args[0] == "add" && (args[1] == "map" || args[1] == "acl")) {
      return Add(args, command.payload);
    }
    if (args[0] == "commit" && (args[1] == "map" || args[1] == "acl")) return Commit(args);
    if (args[0] == "set" && args[1] == "map") return SetMap(args);
    if (args[0] == "del" && (args[1] == "map" || args[1] == "acl")) return Del(args);
    return "Unknown command.";
  }

  // The whole reply as the worker's CLI writes it, for a fake that serves bytes: the listing for
  // `show servers state <backend>`, `show map <name>` and `show acl <name>`; otherwise what
  // Execute answers, with its LF and the blank line that ends every reply ("\n" alone for a
  // silent success).
  std::string Answer(const cli::Command& command) {
    if (command.pid == pid_) {
      std::vector<std::string> args = SplitCliWords(command.text);
      args.resize(std::max<size_t>(args.size(), 4));
      if (args[0] == "show" && args[1] == "servers" && args[2] == "state") {
        return ShowServersState(args[3]);
      }
      if (args[0] == "show" && (args[1] == "map" || args[1] == "acl")) {
        bool is_map = args[1] == "map";
        if (args[2].empty()) return ShowList(is_map ? maps_ : acls_, is_map);
        return is_map ? ShowMap(args[2]) : ShowAcl(args[2]);
      }
    }
    std::string reply = Execute(command);
    return reply.empty() ? "\n" : absl::StrCat(reply, "\n\n");
  }

  std::string ShowServersState(const std::string& backend) const {
    auto found = backends_.find(backend);
    if (found == backends_.end()) return "Can't find backend.\n\n";
    std::vector<parse::ServerStateRow> rows;
    std::vector<std::string> names;
    for (const auto& [name, server] : found->second) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const ObservedServer& server = found->second.at(name);
      parse::ServerStateRow row;
      row.backend_id = 3;
      row.backend = backend;
      row.server_id = static_cast<int>(rows.size()) + 1;
      row.server = name;
      row.address = server.address;
      row.op_state = server.op_state;
      row.admin_state = server.admin_state;
      row.user_weight = server.user_weight;
      row.initial_weight = 1;
      row.fqdn = server.fqdn;
      row.port = server.port;
      rows.push_back(std::move(row));
    }
    return absl::StrCat(parse::FormatServersStateFile(rows), "\n");
  }

  std::string ShowMap(const std::string& name) const { return Show(maps_, name, true); }
  std::string ShowAcl(const std::string& name) const { return Show(acls_, name, false); }

  // A server's runtime state; null when the worker has no such backend or server.
  const ObservedServer* Server(const std::string& backend, const std::string& server) const {
    auto found = backends_.find(backend);
    if (found == backends_.end()) return nullptr;
    auto it = found->second.find(server);
    return it == found->second.end() ? nullptr : &it->second;
  }

  // The current entries of a map, as pairs (what the payload and escaped forms really stored).
  const std::vector<SimEntry>* MapEntries(const std::string& name) const {
    auto found = maps_.find(name);
    return found == maps_.end() ? nullptr : &found->second.current;
  }
  const std::vector<SimEntry>* AclEntries(const std::string& name) const {
    auto found = acls_.find(name);
    return found == acls_.end() ? nullptr : &found->second.current;
  }
  // The same, sorted (what a map holds, whatever order its entries came in); empty when the
  // worker has no such map or ACL.
  std::vector<SimEntry> SortedMapEntries(const std::string& name) const {
    return SortedCopy(MapEntries(name));
  }
  std::vector<SimEntry> SortedAclEntries(const std::string& name) const {
    return SortedCopy(AclEntries(name));
  }

  // What `show …` for each name in `like` (the same keys) reports now, through the real parsers.
  ObservedWorker Observe(const ObservedWorker& like) const {
    ObservedWorker out;
    for (const auto& [name, unused] : like.backends) {
      absl::StatusOr<ObservedBackend> backend = BackendFromReply(ShowServersState(name));
      EXPECT_TRUE(backend.ok()) << backend.status();
      if (backend.ok()) out.backends[name] = *std::move(backend);
    }
    for (const auto& [name, unused] : like.maps) {
      absl::StatusOr<ObservedTable> map = MapFromReply(ShowMap(name));
      EXPECT_TRUE(map.ok()) << map.status();
      if (map.ok()) out.maps[name] = *std::move(map);
    }
    for (const auto& [name, unused] : like.acls) {
      absl::StatusOr<ObservedTable> acl = AclFromReply(ShowAcl(name));
      EXPECT_TRUE(acl.ok()) << acl.status();
      if (acl.ok()) out.acls[name] = *std::move(acl);
    }
    return out;
  }

  // What the reconciler's full observation of `desired` reports: every desired backend, map and
  // ACL, through the real parsers.
  ObservedWorker Observe(const model::DesiredState& desired) const {
    ObservedWorker like;
    for (const auto& [name, unused] : desired.backends) like.backends[name];
    for (const auto& [name, unused] : desired.maps) like.maps[name];
    for (const auto& [name, unused] : desired.acls) like.acls[name];
    return Observe(like);
  }

  int commands_run() const { return commands_run_; }

 private:
  ObservedServer* FindServer(const std::string& target) {
    std::pair<std::string, std::string> names = absl::StrSplit(target, absl::MaxSplits('/', 1));
    auto backend = backends_.find(names.first);
    if (backend == backends_.end()) return nullptr;
    auto server = backend->second.find(names.second);
    return server == backend->second.end() ? nullptr : &server->second;
  }

  // `add server <b>/<s> <addr>:<port> [weight <w>]` as 2.6–3.4 answer it: created in maintenance
  // (FMAINT, not running), weight 1 unless given; a leaving worker after its soft-stop creates it
  // all the same (only enabling it is refused).
  std::string AddServer(const std::vector<std::string>& args) {
    std::pair<std::string, std::string> names = absl::StrSplit(args[2], absl::MaxSplits('/', 1));
    auto backend = backends_.find(names.first);
    if (backend == backends_.end()) return "No such backend.";
    if (backend->second.contains(names.second)) {
      return "Already exists a server with the same name in backend.";
    }
    absl::string_view address = args[3];
    size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) return "Missing port.";
    absl::string_view host = address.substr(0, colon);
    if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) return "bad address";
    ObservedServer server;
    server.address = CanonicalIp(std::string(host));
    if (server.address.empty() || !absl::SimpleAtoi(address.substr(colon + 1), &server.port)) {
      return absl::StrCat("invalid address: '", address, "'");
    }
    server.admin_state = parse::kAdminFMaint;
    server.user_weight = 1;
    if (args[4] == "weight" && !absl::SimpleAtoi(args[5], &server.user_weight)) return "bad weight";
    backend->second[names.second] = server;
    return "New server registered.";
  }

  std::string DelServer(const std::vector<std::string>& args) {
    ObservedServer* server = FindServer(args[2]);
    if (server == nullptr) return "No such server.";
    if ((server->admin_state & parse::kAdminFMaint) == 0) {
      return "Only servers in maintenance mode can be deleted.";
    }
    std::pair<std::string, std::string> names = absl::StrSplit(args[2], absl::MaxSplits('/', 1));
    backends_[names.first].erase(names.second);
    return "Server deleted.";
  }

  std::string SetServer(const std::vector<std::string>& args) {
    ObservedServer* server = FindServer(args[2]);
    if (server == nullptr) return "No such server.";
    if (frozen_) return "Proxy is disabled.";
    const std::string& what = args[3];
    if (what == "addr") {
      std::string ip = CanonicalIp(args[4]);
      if (ip.empty()) return absl::StrCat("Invalid addr '", args[4], "'");
      // src/server.c srv_update_addr_port's wording.
      std::string reply = ip == server->address ? "no need to change the addr"
                                                : absl::StrCat("IP changed from '", server->address,
                                                               "' to '", ip, "'");
      server->address = ip;
      if (args[5] == "port") {
        int port = 0;
        if (!absl::SimpleAtoi(args[6], &port) || port < 0 || port > 65535) return "Invalid port";
        absl::StrAppend(
            &reply, port == server->port
                        ? ", no need to change the port"
                        : absl::StrCat(", port changed from '", server->port, "' to '", port, "'"));
        server->port = port;
      }
      return absl::StrCat(reply, " by 'stats socket command'");
    }
    if (what == "fqdn") {
      if (args[4].empty()) return "set server <b>/<s> requires an FQDN.";
      server->fqdn = args[4];
      return "";
    }
    if (what == "weight") {
      int weight = 0;
      if (!absl::SimpleAtoi(args[4], &weight) || weight < 0 || weight > 256) {
        return "Absolute weight can only be between 0 and 256 inclusive.";
      }
      server->user_weight = weight;
      return "";
    }
    if (what == "state") {
      // src/server.h srv_adm_set_ready/drain/maint (maint also clears FDRAIN: seen on 2.6.12).
      int& admin = server->admin_state;
      if (args[4] == "ready") {
        admin &= ~(parse::kAdminFMaint | parse::kAdminFDrain);
      } else if (args[4] == "drain") {
        admin = (admin | parse::kAdminFDrain) & ~parse::kAdminFMaint;
      } else if (args[4] == "maint") {
        admin = (admin | parse::kAdminFMaint) & ~parse::kAdminFDrain;
      } else {
        return "'set server <srv> state' expects 'ready', 'drain' and 'maint'.";
      }
      return "";
    }
    return "usage: set server <backend>/<server> …";
  }

  absl::flat_hash_map<std::string, SimPatternRef>& Refs(const std::string& kind) {
    return kind == "map" ? maps_ : acls_;
  }

  static std::string Unknown(const std::string& kind) {
    return kind == "map" ? "Unknown map identifier. Please use #<id> or <file>."
                         : "Unknown ACL identifier. Please use #<id> or <file>.";
  }

  std::string Prepare(const std::vector<std::string>& args) {
    auto found = Refs(args[1]).find(args[2]);
    if (found == Refs(args[1]).end()) return Unknown(args[1]);
    SimPatternRef& ref = found->second;
    int64_t version = ++ref.next_version;
    ref.prepared[version] = {};
    return absl::StrCat("New version created: ", version);
  }

  // The version named by "@N" in args[2], or -1.
  static int64_t Version(const std::string& word) {
    int64_t version = -1;
    if (!absl::StartsWith(word, "@") || !absl::SimpleAtoi(word.substr(1), &version)) return -1;
    return version;
  }

  std::string Add(std::vector<std::string> args, const std::string& payload) {
    const std::string kind = args[1];
    int64_t version = -2;
    if (!args[2].empty() && args[2][0] == '@') {
      version = Version(args[2]);
      args.erase(args.begin() + 2);
      args.emplace_back();
    }
    bool is_map = kind == "map";
    bool has_payload = !payload.empty();
    if (is_map ? (has_payload ? args[2].empty() : args[4].empty())
               : (args[2].empty() || args[3].empty())) {
      return is_map ? "'add map' expects three parameters (map identifier, key and value) or "
                      "one parameter (map identifier) and a payload"
                    : "'add acl' expects two parameters: ACL identifier and pattern.";
    }
    auto found = Refs(kind).find(args[2]);
    if (found == Refs(kind).end()) return Unknown(kind);
    SimPatternRef& ref = found->second;
    std::vector<SimEntry>* target = &ref.current;
    if (version != -2) {
      auto prepared = ref.prepared.find(version);
      if (prepared == ref.prepared.end()) {
        return "Version number in the future, please use 'prepare map' before.";
      }
      target = &prepared->second;
    }
    if (!has_payload) {
      // Only args[3] (and args[4] for a map) are read: extra words are silently ignored.
      target->push_back(SimEntry{args[3], is_map ? args[4] : ""});
      return "";
    }
    // src/map.c cli_parse_add_map with a payload: the lines joined by LF; the key ends at the
    // first space or tab (not at LF!), one separator is skipped, then every space and tab; the
    // value is the rest of the line.
    std::string text = payload.substr(0, payload.size() - 1);  // without the last line's LF
    size_t p = 0;
    while (p < text.size()) {
      size_t key_end = text.find_first_of(" \t", p);
      if (key_end == std::string::npos) {
        return absl::StrCat("Missing value for key '", text.substr(p), "'.");
      }
      std::string key = text.substr(p, key_end - p);
      p = key_end + 1;
      while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
      size_t value_end = text.find('\n', p);
      if (value_end == std::string::npos) value_end = text.size();
      target->push_back(SimEntry{key, text.substr(p, value_end - p)});
      p = value_end < text.size() ? value_end + 1 : value_end;
    }
    return "";
  }

  static std::vector<SimEntry> SortedCopy(const std::vector<SimEntry>* entries) {
    if (entries == nullptr) return {};
    std::vector<SimEntry> out = *entries;
    std::sort(out.begin(), out.end());
    return out;
  }

  // The pointer `show map` prints for entry `index` ("%p").
  static uint64_t Pointer(size_t index) { return 0x557909023000 + 0x90 * index; }

  // src/map.c: a key word starting with "#0x" names an entry by its pointer. nullopt when `word`
  // is a key; else the entry's index, or -1 when no entry has that pointer, or -2 when the rest
  // is not hexadecimal.
  static absl::optional<int64_t> EntryReference(const std::string& word,
                                                const std::vector<SimEntry>& entries) {
    if (!absl::StartsWith(word, "#0x")) return absl::nullopt;
    uint64_t pointer = 0;
    if (!absl::SimpleHexAtoi(word.substr(1), &pointer)) return -2;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (Pointer(i) == pointer) return static_cast<int64_t>(i);
    }
    return -1;
  }

  static constexpr char kMalformedReference[] = "Malformed identifier. Please use #<id> or <file>.";

  std::string SetMap(const std::vector<std::string>& args) {
    if (args[2].empty() || args[3].empty() || args[4].empty()) {
      return "'set map' expects three parameters: map identifier, key and value.";
    }
    auto found = maps_.find(args[2]);
    if (found == maps_.end()) return Unknown("map");
    std::vector<SimEntry>& entries = found->second.current;
    if (absl::optional<int64_t> ref = EntryReference(args[3], entries)) {
      if (*ref == -2) return kMalformedReference;
      if (*ref < 0) return "key or pattern not found.";
      entries[static_cast<size_t>(*ref)].value = args[4];
      return "";
    }
    bool any = false;
    for (SimEntry& entry : entries) {
      if (entry.key == args[3]) {
        entry.value = args[4];  // every entry with the key (src/pattern.c pat_ref_set)
        any = true;
      }
    }
    return any ? "" : "entry not found.";
  }

  std::string Del(const std::vector<std::string>& args) {
    const std::string& kind = args[1];
    if (args[2].empty() || args[3].empty()) {
      return absl::StrCat("This command expects two parameters: ", kind == "map" ? "map" : "ACL",
                          " identifier and key.");
    }
    auto found = Refs(kind).find(args[2]);
    // `del acl` words an unknown ACL as a map (src/map.c cli_parse_del_map).
    if (found == Refs(kind).end()) return Unknown("map");
    std::vector<SimEntry>& entries = found->second.current;
    if (absl::optional<int64_t> ref = EntryReference(args[3], entries)) {
      if (*ref == -2) return kMalformedReference;
      if (*ref < 0) return "Key not found.";
      entries.erase(entries.begin() + *ref);
      return "";
    }
    bool any = false;
    for (auto it = entries.begin(); it != entries.end();) {
      if (it->key != args[3]) {
        ++it;
        continue;
      }
      it = entries.erase(it);
      any = true;
      if (options_.del_removes_first_only) break;
    }
    return any ? "" : "Key not found.";
  }

  std::string Commit(const std::vector<std::string>& args) {
    int64_t version = Version(args[2]);
    if (version < 0) return "Missing version number.";
    auto found = Refs(args[1]).find(args[3]);
    if (found == Refs(args[1]).end()) return Unknown(args[1]);
    SimPatternRef& ref = found->second;
    auto prepared = ref.prepared.find(version);
    if (prepared == ref.prepared.end()) return "Version number out of range.";
    ref.current = std::move(prepared->second);
    ref.prepared.clear();  // a commit drops the older versions
    return "";
  }

  // The listing, `show map` / `show acl` without a name, as 2.6 to 3.4 print it (src/map.c):
  //   # id (file) description
  //   2 (/etc/h.map) pattern loaded from file '/etc/h.map' used by map at file 'h.cfg' line 10.
  //   curr_ver=0 next_ver=0 entry_cnt=1   (one line)
  static std::string ShowList(const absl::flat_hash_map<std::string, SimPatternRef>& refs,
                              bool is_map) {
    std::vector<std::string> names;
    for (const auto& [name, ref] : refs) names.push_back(name);
    std::sort(names.begin(), names.end());
    std::string out = "# id (file) description\n";
    for (size_t i = 0; i < names.size(); ++i) {
      const SimPatternRef& ref = refs.at(names[i]);
      absl::StrAppend(&out, i + 1, " (", names[i], ") pattern loaded from file '", names[i],
                      "' used by ", is_map ? "map" : "acl", " at file 'haproxy.cfg' line ", i + 10,
                      ". curr_ver=0 next_ver=", ref.next_version, " entry_cnt=", ref.current.size(),
                      "\n");
    }
    out.push_back('\n');
    return out;
  }

  static std::string Show(const absl::flat_hash_map<std::string, SimPatternRef>& refs,
                          const std::string& name, bool is_map) {
    auto found = refs.find(name);
    if (found == refs.end()) {
      return absl::StrCat(is_map ? Unknown("map") : Unknown("acl"), "\n\n");
    }
    std::string out;
    const std::vector<SimEntry>& entries = found->second.current;
    for (size_t i = 0; i < entries.size(); ++i) {
      // "%p %s %s" / "%p %s" (src/map.c cli_io_handler_pat_list).
      absl::StrAppend(&out, "0x", absl::Hex(Pointer(i)), " ", entries[i].key);
      if (is_map) absl::StrAppend(&out, " ", entries[i].value);
      out.push_back('\n');
    }
    out.push_back('\n');
    return out;
  }

  int pid_;
  SimOptions options_;
  bool frozen_ = false;
  int commands_run_ = 0;
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, ObservedServer>> backends_;
  absl::flat_hash_map<std::string, SimPatternRef> maps_;
  absl::flat_hash_map<std::string, SimPatternRef> acls_;
};

// What ApplyPlan did.
struct ApplyResult {
  int commands = 0;           // commands run
  bool cut = false;           // stopped at `cut_at`: the rest was not run
  int entries_not_found = 0;  // `set map` answered "entry not found." (then `add map` was sent)
  int keys_not_found = 0;     // `del map|acl` answered "Key not found." (done: it is not there)
};

// Applies `plan` to `sim` the way the reconciler sends it (reconcile/reconciler.cc): first, in
// plan order, every server command, every `prepare` and every per-entry command; then each
// transaction's `add … @N` and `commit`, and the `add map` after a `set map` that answered "entry
// not found.". Every other reply must be a success (a test failure otherwise), except "Key not
// found." to a `del` (what was wanted). With `cut_at`, stops before running command number
// `cut_at` (counted from 0), as a connection closed mid-batch: what ran stays.
inline ApplyResult ApplyPlan(SimWorker* sim, const Plan& plan,
                             absl::optional<int> cut_at = absl::nullopt, int pid = 4242) {
  ApplyResult result;
  auto run = [&](const cli::Command& command) -> absl::optional<std::string> {
    if (cut_at && result.commands >= *cut_at) {
      result.cut = true;
      return absl::nullopt;
    }
    ++result.commands;
    return sim->Execute(command);
  };
  auto expect_ok = [](const std::string& reply, const cli::Command& command) {
    EXPECT_TRUE(parse::ClassifyMutationReply(reply).ok()) << reply << " ← " << command.text;
  };
  struct Second {
    const Action* action;
    int64_t version = -1;    // a transaction: the prepared version
    bool follow_up = false;  // an `add map` after "entry not found."
  };
  std::vector<Second> second;
  for (const Action& action : plan.actions) {
    if (IsServerAction(action.kind)) {
      std::vector<cli::Command> commands = ServerCommands(pid, action);
      EXPECT_FALSE(commands.empty()) << action.object();
      for (const cli::Command& command : commands) {
        absl::optional<std::string> reply = run(command);
        if (!reply) return result;
        expect_ok(*reply, command);
      }
      continue;
    }
    if (IsReplaceAction(action.kind)) {
      cli::Command prepare = PrepareCommand(pid, action);
      absl::optional<std::string> reply = run(prepare);
      if (!reply) return result;
      absl::StatusOr<int64_t> version = parse::ParseNewVersion(*reply);
      EXPECT_TRUE(version.ok()) << version.status();
      if (version.ok()) second.push_back(Second{&action, *version, false});
      continue;
    }
    absl::StatusOr<cli::Command> command = EntryCommand(pid, action);
    EXPECT_TRUE(command.ok()) << command.status();
    if (!command.ok()) continue;
    absl::optional<std::string> reply = run(*command);
    if (!reply) return result;
    parse::ClassifiedReply classified = parse::ClassifyMutationReply(*reply);
    bool is_set =
        action.kind == ActionKind::kSetMapEntry || action.kind == ActionKind::kUpsertMapEntry;
    bool is_del =
        action.kind == ActionKind::kDelMapEntry || action.kind == ActionKind::kDelAclPattern;
    if (is_set && classified.code == parse::ReplyCode::kEntryNotFound) {
      ++result.entries_not_found;
      second.push_back(Second{&action, -1, true});
    } else if (is_del && classified.code == parse::ReplyCode::kKeyNotFound) {
      ++result.keys_not_found;
    } else {
      expect_ok(*reply, *command);
    }
  }
  for (const Second& step : second) {
    std::vector<cli::Command> commands;
    if (step.follow_up) {
      absl::StatusOr<cli::Command> add =
          AddMapEntryCommand(pid, step.action->map_or_acl, step.action->key, step.action->value);
      EXPECT_TRUE(add.ok()) << add.status();
      if (add.ok()) commands.push_back(*std::move(add));
    } else {
      absl::StatusOr<std::vector<cli::Command>> transaction =
          TransactionCommands(pid, *step.action, step.version);
      EXPECT_TRUE(transaction.ok()) << transaction.status();
      if (transaction.ok()) commands = *std::move(transaction);
    }
    for (const cli::Command& command : commands) {
      absl::optional<std::string> reply = run(command);
      if (!reply) return result;
      expect_ok(*reply, command);
    }
  }
  return result;
}

// Applies `plan` to a worker that holds `observed`, then observes every object of `observed`
// again. Every command must succeed (on a frozen worker, only map and ACL commands are sent:
// PlanWorker leaves the servers out).
inline ObservedWorker Apply(const ObservedWorker& observed, const Plan& plan, bool frozen = false,
                            int pid = 4242) {
  SimWorker sim(observed, pid);
  sim.set_frozen(frozen);
  ApplyPlan(&sim, plan, absl::nullopt, pid);
  return sim.Observe(observed);
}

}  // namespace hawk::plan::testing
