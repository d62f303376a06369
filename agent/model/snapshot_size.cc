#include "agent/model/snapshot_size.h"

#include <utility>

#include "absl/strings/string_view.h"
#include "agent/base/json_writer.h"

namespace hawk::model {
namespace {

using base::JsonStringSize;

// The pieces DesiredStateToJson writes around the values (desired_json.cc).
constexpr absl::string_view kRootOpen = R"({"version":)";
constexpr absl::string_view kGeneration = R"(,"generation":)";  // then a quoted decimal
constexpr absl::string_view kRootLists = R"(,"backends":[],"maps":[],"acls":[]})";
constexpr uint64_t kNewline = 1;  // after the object, in the snapshot file
constexpr uint64_t kComma = 1;    // after every element (see the header: an upper bound)

constexpr absl::string_view kBackendOpen = R"({"name":)";
constexpr absl::string_view kBackendServers = R"(,"servers":[]})";
constexpr absl::string_view kServerOpen = R"({"name":)";
constexpr absl::string_view kAddress = R"(,"address":)";
constexpr absl::string_view kPort = R"(,"port":)";
constexpr absl::string_view kWeight = R"(,"weight":)";
constexpr absl::string_view kState = R"(,"state":)";
constexpr absl::string_view kServerClose = "}";
constexpr absl::string_view kMapOpen = R"({"name":)";
constexpr absl::string_view kMapEntries = R"(,"entries":[]})";
constexpr absl::string_view kEntryKey = R"({"key":)";
constexpr absl::string_view kEntryValue = R"(,"value":)";
constexpr absl::string_view kEntryClose = "}";
constexpr absl::string_view kAclOpen = R"({"name":)";
constexpr absl::string_view kAclPatterns = R"(,"patterns":[]})";

uint64_t DecimalDigits(int64_t n) {
  uint64_t digits = n < 0 ? 2 : 1;
  uint64_t magnitude = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  while (magnitude >= 10) {
    magnitude /= 10;
    ++digits;
  }
  return digits;
}

uint64_t RootBytes(const DesiredState& state) {
  uint64_t bytes = kRootOpen.size() + JsonStringSize(state.version) + kRootLists.size() + kNewline;
  if (state.generation) bytes += kGeneration.size() + 2 + DecimalDigits(*state.generation);
  return bytes;
}

uint64_t BackendBytes(absl::string_view name) {
  return kBackendOpen.size() + JsonStringSize(name) + kBackendServers.size() + kComma;
}

uint64_t EntryBytes(absl::string_view key, absl::string_view value, bool acl) {
  if (acl) return JsonStringSize(key) + kComma;
  return kEntryKey.size() + JsonStringSize(key) + kEntryValue.size() + JsonStringSize(value) +
         kEntryClose.size() + kComma;
}

// The bytes the changed entries of `change` add to their table's element (may be negative).
int64_t EntriesChange(const TableChange& change, const StringTable& after, bool acl) {
  int64_t bytes = 0;
  change.existed.ForEach([&](absl::string_view key, absl::string_view before) {
    bytes -= static_cast<int64_t>(EntryBytes(key, before, acl));
    if (absl::optional<absl::string_view> now = after.Find(key)) {
      bytes += static_cast<int64_t>(EntryBytes(key, *now, acl));
    }
  });
  change.was_absent.ForEach([&](absl::string_view key, absl::string_view) {
    if (absl::optional<absl::string_view> now = after.Find(key)) {
      bytes += static_cast<int64_t>(EntryBytes(key, *now, acl));
    }
  });
  return bytes;
}

}  // namespace

uint64_t SnapshotSize::ServerBytes(const std::string& name, const ServerSpec& spec) {
  uint64_t bytes = kServerOpen.size() + JsonStringSize(name) + kAddress.size() +
                   JsonStringSize(spec.address) + kServerClose.size() + kComma;
  if (spec.port) bytes += kPort.size() + DecimalDigits(*spec.port);
  if (spec.weight) bytes += kWeight.size() + DecimalDigits(*spec.weight);
  if (spec.state) bytes += kState.size() + JsonStringSize(ServerStateName(*spec.state));
  return bytes;
}

uint64_t SnapshotSize::TableBytes(const std::string& name, const StringTable& table, bool acl) {
  uint64_t bytes =
      (acl ? kAclOpen.size() + kAclPatterns.size() : kMapOpen.size() + kMapEntries.size()) +
      JsonStringSize(name) + kComma;
  table.ForEach([&](absl::string_view key, absl::string_view value) {
    bytes += EntryBytes(key, value, acl);
  });
  return bytes;
}

SnapshotSize::SnapshotSize() { Reset(DesiredState{}); }

void SnapshotSize::Reset(const DesiredState& state) {
  root_ = RootBytes(state);
  lists_ = 0;
  maps_.clear();
  acls_.clear();
  for (const auto& [name, backend] : state.backends) {
    lists_ += BackendBytes(name);
    for (const auto& [server, spec] : backend.servers) lists_ += ServerBytes(server, spec);
  }
  for (bool acl : {false, true}) {
    auto& counted = acl ? acls_ : maps_;
    for (const auto& [name, table] : acl ? state.acls : state.maps) {
      uint64_t bytes = TableBytes(name, table, acl);
      counted[name] = bytes;
      lists_ += bytes;
    }
  }
}

SnapshotSize::Undo SnapshotSize::Apply(const ChangeSummary& summary, const DesiredState& after) {
  Undo undo;
  undo.root = root_;
  undo.lists = lists_;
  root_ = RootBytes(after);
  int64_t change = 0;
  for (const std::string& name : summary.backends_created) change += BackendBytes(name);
  for (const std::string& name : summary.backends_dropped) change -= BackendBytes(name);
  for (const ServerChange& server : summary.servers) {
    if (server.before) change -= ServerBytes(server.server, *server.before);
    if (!server.managed_after) continue;
    if (const ServerSpec* now = after.FindServer(server.backend, server.server)) {
      change += ServerBytes(server.server, *now);
    }
  }
  for (bool acl : {false, true}) {
    auto& counted = acl ? acls_ : maps_;
    for (const TableChange& table : acl ? summary.acls : summary.maps) {
      auto it = counted.find(table.name);
      absl::optional<uint64_t> before;
      if (it != counted.end()) before = it->second;
      undo.tables.push_back(Undo::Table{acl, table.name, before});
      const StringTable* now = acl ? after.FindAcl(table.name) : after.FindMap(table.name);
      uint64_t bytes = 0;
      if (now != nullptr) {
        bytes = table.replace || !before ? TableBytes(table.name, *now, acl)
                                         : static_cast<uint64_t>(static_cast<int64_t>(*before) +
                                                                 EntriesChange(table, *now, acl));
      }
      change += static_cast<int64_t>(bytes) - static_cast<int64_t>(before.value_or(0));
      if (now == nullptr) {
        if (it != counted.end()) counted.erase(it);
      } else if (it != counted.end()) {
        it->second = bytes;
      } else {
        counted.emplace(table.name, bytes);
      }
    }
  }
  lists_ = static_cast<uint64_t>(static_cast<int64_t>(lists_) + change);
  return undo;
}

void SnapshotSize::Revert(Undo undo) {
  for (auto it = undo.tables.rbegin(); it != undo.tables.rend(); ++it) {
    auto& counted = it->acl ? acls_ : maps_;
    if (it->bytes) {
      counted[it->name] = *it->bytes;
    } else {
      counted.erase(it->name);
    }
  }
  root_ = undo.root;
  lists_ = undo.lists;
}

}  // namespace hawk::model
