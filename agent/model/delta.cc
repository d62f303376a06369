#include "agent/model/delta.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hawk::model {

struct Undo::Step {
  enum class Kind {
    kBackend,  // put `backend` back (nullopt: it did not exist)
    kServer,   // put `spec` back for `server` of backend `name` (nullopt: erase it)
    kTable,    // put `table` back (nullopt: it did not exist)
    kEntries,  // put the previous values of the keys of one table back
  };
  Kind kind = Kind::kServer;
  bool acl = false;
  std::string name;
  std::string server;
  absl::optional<ServerSpec> spec;
  absl::optional<DesiredBackend> backend;
  absl::optional<StringTable> table;
  absl::optional<StringTable> previous;  // kEntries: key → value before
  absl::optional<StringTable> absent;    // kEntries: keys that did not exist before
};

Undo::Undo() = default;
Undo::~Undo() = default;
Undo::Undo(Undo&&) noexcept = default;
Undo& Undo::operator=(Undo&&) noexcept = default;

size_t Delta::object_count() const {
  size_t n = 0;
  for (const BackendDelta& b : backends) n += b.servers.size();
  for (const TableDelta& t : maps) n += t.set.size() + t.erase.size();
  for (const TableDelta& t : acls) n += t.set.size() + t.erase.size();
  return n;
}

namespace {

using Tables = absl::flat_hash_map<std::string, StringTable>;

void ApplyBackend(const BackendDelta& delta, DesiredState* state, Undo* undo,
                  ChangeSummary* summary) {
  if (delta.drop) {
    auto it = state->backends.find(delta.name);
    if (it == state->backends.end()) return;
    for (const auto& [server, spec] : it->second.servers) {
      summary->servers.push_back(ServerChange{delta.name, server, spec, /*managed_after=*/false});
    }
    Undo::Step step;
    step.kind = Undo::Step::Kind::kBackend;
    step.name = delta.name;
    step.backend = std::move(it->second);
    undo->steps.push_back(std::move(step));
    state->backends.erase(it);
    summary->backends_dropped.push_back(delta.name);
    return;
  }
  bool only_removals = std::all_of(delta.servers.begin(), delta.servers.end(),
                                   [](const auto& entry) { return !entry.second.has_value(); });
  if (!delta.create && only_removals && !state->backends.contains(delta.name)) return;
  auto [it, inserted] = state->backends.try_emplace(delta.name);
  if (inserted) {
    Undo::Step step;
    step.kind = Undo::Step::Kind::kBackend;
    step.name = delta.name;
    undo->steps.push_back(std::move(step));  // restores "absent"
    summary->backends_created.push_back(delta.name);
  }
  auto& servers = it->second.servers;
  for (const auto& [server, spec] : delta.servers) {
    auto found = servers.find(server);
    absl::optional<ServerSpec> before;
    if (found != servers.end()) before = found->second;
    if (spec) {
      if (before == spec) continue;
      servers[server] = *spec;
    } else {
      if (!before) continue;
      servers.erase(found);
    }
    if (!inserted) {  // a created backend's own step removes its servers on undo
      Undo::Step step;
      step.kind = Undo::Step::Kind::kServer;
      step.name = delta.name;
      step.server = server;
      step.spec = before;
      undo->steps.push_back(std::move(step));
    }
    summary->servers.push_back(
        ServerChange{delta.name, server, std::move(before), spec.has_value()});
  }
}

void ApplyTable(const TableDelta& delta, bool acl, Tables* tables, Undo* undo,
                std::vector<TableChange>* changes) {
  if (delta.drop) {
    auto it = tables->find(delta.name);
    if (it == tables->end()) return;
    Undo::Step step;
    step.kind = Undo::Step::Kind::kTable;
    step.acl = acl;
    step.name = delta.name;
    step.table = std::move(it->second);
    undo->steps.push_back(std::move(step));
    tables->erase(it);
    TableChange change;
    change.name = delta.name;
    change.dropped = true;
    changes->push_back(std::move(change));
    return;
  }
  // Deleting entries of a table that is not held changes nothing (it does not become managed).
  if (!delta.create && delta.set.empty() && !tables->contains(delta.name)) return;
  auto [it, inserted] = tables->try_emplace(delta.name);
  StringTable& table = it->second;
  TableChange change;
  change.name = delta.name;
  if (inserted) {
    Undo::Step step;
    step.kind = Undo::Step::Kind::kTable;
    step.acl = acl;
    step.name = delta.name;
    undo->steps.push_back(std::move(step));  // restores "absent"
    change.replace = true;                   // what each worker holds is whatever its file said
    table.Reserve(delta.set.size(), 0);
    delta.set.ForEach([&table](absl::string_view k, absl::string_view v) { table.Set(k, v); });
    changes->push_back(std::move(change));
    return;
  }
  Undo::Step step;
  step.kind = Undo::Step::Kind::kEntries;
  step.acl = acl;
  step.name = delta.name;
  step.previous.emplace();
  step.absent.emplace();
  auto record = [&](absl::string_view key, const absl::optional<std::string>& before) {
    if (before) {
      step.previous->Set(key, *before);
      change.existed.Set(key, *before);
    } else {
      step.absent->Set(key, "");
      change.was_absent.Set(key, "");
    }
  };
  delta.set.ForEach([&](absl::string_view key, absl::string_view value) {
    absl::optional<std::string> before = table.Set(key, value);
    if (before && *before == value) return;
    record(key, before);
  });
  delta.erase.ForEach([&](absl::string_view key, absl::string_view) {
    absl::optional<std::string> before = table.Erase(key);
    if (!before) return;
    record(key, before);
  });
  if (delta.create) {
    // The table holds exactly `set` afterwards: what else it held goes.
    std::vector<std::string> extra;
    table.ForEach([&](absl::string_view key, absl::string_view) {
      if (!delta.set.Contains(key)) extra.emplace_back(key);
    });
    for (const std::string& key : extra) record(key, table.Erase(key));
  }
  if (change.changed_keys() == 0) return;
  undo->steps.push_back(std::move(step));
  if (ReplaceIsCheaper(change.changed_keys(), table.size())) {
    change.replace = true;
    change.existed = StringTable();
    change.was_absent = StringTable();
  }
  changes->push_back(std::move(change));
}

Tables& TablesOf(DesiredState* state, bool acl) { return acl ? state->acls : state->maps; }

void UndoStep(Undo::Step step, DesiredState* state) {
  using Kind = Undo::Step::Kind;
  switch (step.kind) {
    case Kind::kBackend:
      if (step.backend) {
        state->backends[step.name] = *std::move(step.backend);
      } else {
        state->backends.erase(step.name);
      }
      return;
    case Kind::kServer: {
      DesiredBackend& backend = state->backends[step.name];
      if (step.spec) {
        backend.servers[step.server] = *std::move(step.spec);
      } else {
        backend.servers.erase(step.server);
      }
      return;
    }
    case Kind::kTable: {
      Tables& tables = TablesOf(state, step.acl);
      if (step.table) {
        tables[step.name] = *std::move(step.table);
      } else {
        tables.erase(step.name);
      }
      return;
    }
    case Kind::kEntries: {
      StringTable& table = TablesOf(state, step.acl)[step.name];
      step.previous->ForEach(
          [&table](absl::string_view k, absl::string_view v) { table.Set(k, v); });
      step.absent->ForEach([&table](absl::string_view k, absl::string_view) { table.Erase(k); });
      return;
    }
  }
}

}  // namespace

AppliedDelta ApplyDelta(const Delta& delta, DesiredState* state) {
  AppliedDelta out;
  out.undo.version = state->version;
  out.undo.generation = state->generation;
  state->version = delta.version;
  state->generation = delta.generation;
  out.summary.version = delta.version;
  out.summary.generation = delta.generation;
  for (const BackendDelta& backend : delta.backends) {
    ApplyBackend(backend, state, &out.undo, &out.summary);
  }
  for (const TableDelta& map : delta.maps) {
    ApplyTable(map, /*acl=*/false, &state->maps, &out.undo, &out.summary.maps);
  }
  for (const TableDelta& acl : delta.acls) {
    ApplyTable(acl, /*acl=*/true, &state->acls, &out.undo, &out.summary.acls);
  }
  return out;
}

void UndoDelta(Undo undo, DesiredState* state) {
  for (auto it = undo.steps.rbegin(); it != undo.steps.rend(); ++it) {
    UndoStep(std::move(*it), state);
  }
  state->version = std::move(undo.version);
  state->generation = undo.generation;
}

}  // namespace hawk::model
