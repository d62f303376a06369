// The JSON codecs of the API and the journal over any bytes. Every input is read as each of:
//   - a desired state (PUT /v1/state): one that parses must come back the same through
//     DesiredStateToJson (desired_json.h documents it), and every name or value it holds must be
//     safe to put in a CLI command line: no byte that ends a command or starts another; read as
//     the change from a fixed small held state (what a PUT does), it is the difference of that
//     state, or the same error;
//   - a state patch (PATCH /v1/state) against a fixed small held state: parsing never crashes;
//     an accepted patch resolves to a Delta that, applied, leaves a state a PUT would accept (and
//     as CLI-safe), that undone restores the held state exactly, and that survives the journal's
//     record format (DeltaToJson, ParseDeltaJson) unchanged;
//     its snapshot size, counted by model::SnapshotSize from the change alone, is the size of
//     the state's snapshot (and again once undone);
//   - a journal record: one that parses is CLI-safe and round-trips through DeltaToJson;
//   - a reload request.
// Seeds: tests/fuzz/corpus/json (documents, patches, records).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/model/delta.h"
#include "agent/model/delta_json.h"
#include "agent/model/desired_json.h"
#include "agent/model/patch.h"
#include "agent/model/reload_json.h"
#include "agent/model/snapshot_size.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/model_oracle.h"

namespace {

using hawk::model::Delta;
using hawk::model::DesiredState;
using hawk::model::StringTable;
using hawk::model::TableDelta;

bool NoLineBreakOrNul(absl::string_view text) {
  return text.find_first_of(absl::string_view("\n\r\0", 3)) == absl::string_view::npos;
}

// One CLI word that cannot end the command, start another or start a prefix (`@`).
bool SafeIdentifier(absl::string_view name) {
  return !name.empty() && name[0] != '@' && NoLineBreakOrNul(name) &&
         name.find_first_of(" \t;#") == absl::string_view::npos;
}

bool SafeEntries(const StringTable& table) {
  bool safe = true;
  table.ForEach([&safe](absl::string_view key, absl::string_view value) {
    safe = safe && NoLineBreakOrNul(key) && NoLineBreakOrNul(value);
  });
  return safe;
}

void CheckCliSafe(const DesiredState& state) {
  for (const auto& [name, backend] : state.backends) {
    HAWK_FUZZ_CHECK(SafeIdentifier(name), "a backend name unsafe in a CLI line");
    for (const auto& [server, spec] : backend.servers) {
      HAWK_FUZZ_CHECK(SafeIdentifier(server), "a server name unsafe in a CLI line");
      HAWK_FUZZ_CHECK(spec.address.empty() || SafeIdentifier(spec.address),
                      "an address unsafe in a CLI line");
    }
  }
  for (const auto& [name, table] : state.maps) {
    HAWK_FUZZ_CHECK(SafeIdentifier(name), "a map name unsafe in a CLI line");
    HAWK_FUZZ_CHECK(SafeEntries(table), "a map entry with a line break or NUL");
  }
  for (const auto& [name, table] : state.acls) {
    HAWK_FUZZ_CHECK(SafeIdentifier(name), "an ACL name unsafe in a CLI line");
    HAWK_FUZZ_CHECK(SafeEntries(table), "an ACL pattern with a line break or NUL");
  }
}

void CheckCanonicalRoundTrip(const DesiredState& state) {
  std::string canonical = hawk::model::DesiredStateToJson(state);
  auto again = hawk::model::ParseDesiredState(canonical);
  HAWK_FUZZ_CHECK(again.ok(), "the canonical JSON of a state does not parse");
  HAWK_FUZZ_CHECK(*again == state, "the canonical JSON reads back to another state");
  HAWK_FUZZ_CHECK(hawk::model::DesiredStateToJson(*again) == canonical,
                  "the canonical JSON is not stable");
}

// What SnapshotSize counts for `state`: its snapshot (DesiredStateToJson and a newline), and a
// comma after the last element of each non-empty list.
uint64_t SnapshotBytes(const DesiredState& state) {
  uint64_t lists = !state.backends.empty() + !state.maps.empty() + !state.acls.empty();
  for (const auto& [name, backend] : state.backends) lists += !backend.servers.empty();
  for (const auto& [name, table] : state.maps) lists += !table.empty();
  for (const auto& [name, table] : state.acls) lists += !table.empty();
  return hawk::model::DesiredStateToJson(state).size() + 1 + lists;
}

bool SameTables(const std::vector<TableDelta>& a, const std::vector<TableDelta>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].create != b[i].create || a[i].drop != b[i].drop ||
        !(a[i].set == b[i].set) || !(a[i].erase == b[i].erase)) {
      return false;
    }
  }
  return true;
}

// Deltas have no operator==; tables compare by content (a record lists them in their own order).
bool SameDelta(const Delta& a, const Delta& b) {
  if (a.version != b.version || a.generation != b.generation ||
      a.backends.size() != b.backends.size()) {
    return false;
  }
  for (size_t i = 0; i < a.backends.size(); ++i) {
    const auto& x = a.backends[i];
    const auto& y = b.backends[i];
    if (x.name != y.name || x.create != y.create || x.drop != y.drop || x.servers != y.servers) {
      return false;
    }
  }
  return SameTables(a.maps, b.maps) && SameTables(a.acls, b.acls);
}

void CheckRecordRoundTrip(const Delta& delta) {
  auto parsed = hawk::model::ParseDeltaJson(hawk::model::DeltaToJson(delta));
  HAWK_FUZZ_CHECK(parsed.ok(), "a delta's journal record does not parse");
  HAWK_FUZZ_CHECK(SameDelta(*parsed, delta), "a delta's journal record reads back to another");
}

// What a PATCH is validated against: a little of everything, with names seeds can hit.
const DesiredState& Held() {
  static const DesiredState* held = [] {
    auto state = hawk::model::ParseDesiredState(R"({"version": "v1", "generation": 1,
      "backends": [{"name": "be", "servers": [
          {"name": "s1", "address": "10.0.0.1", "port": 80},
          {"name": "s2", "address": "10.0.0.2", "port": 80, "weight": 10, "state": "DRAIN"}]},
        {"name": "other", "servers": [{"name": "x", "address": "app.example.com"}]},
        {"name": "empty"}],
      "maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"},
                                          {"key": "key with spaces", "value": "v;al\\ue"}]},
               {"name": "/empty.map"}],
      "acls": [{"name": "/a", "patterns": ["10.0.0.0/8", "192.0.2.1"]}]})");
    HAWK_FUZZ_CHECK(state.ok(), "the held state of the PATCH target does not parse");
    return new DesiredState(*std::move(state));
  }();
  return *held;
}

void FuzzPatch(absl::string_view json) {
  const DesiredState& held = Held();
  auto patch = hawk::model::ParseStatePatch(json, held);
  if (!patch.ok()) return;
  Delta delta = hawk::model::PatchToDelta(*patch, held);
  CheckRecordRoundTrip(delta);
  DesiredState state = held;
  hawk::model::SnapshotSize size;
  size.Reset(held);
  hawk::model::AppliedDelta applied = hawk::model::ApplyDelta(delta, &state);
  hawk::model::SnapshotSize::Undo counted = size.Apply(applied.summary, state);
  HAWK_FUZZ_CHECK(size.bytes() == SnapshotBytes(state),
                  "the snapshot size counted from a patch's change is not the state's");
  CheckCliSafe(state);
  // Whatever a PATCH makes is a valid document (every server has an address, limits hold).
  CheckCanonicalRoundTrip(state);
  // Applying it again changes nothing (replaying a journal record is idempotent).
  DesiredState twice = state;
  HAWK_FUZZ_CHECK(hawk::model::ApplyDelta(delta, &twice).summary.empty() && twice == state,
                  "a patch's delta applied twice changes the state again");
  hawk::model::UndoDelta(std::move(applied.undo), &state);
  HAWK_FUZZ_CHECK(state == held, "a patch's delta undone does not restore the held state");
  size.Revert(std::move(counted));
  HAWK_FUZZ_CHECK(size.bytes() == SnapshotBytes(held),
                  "the snapshot size of an undone patch is not the held state's");
}

void FuzzRecord(absl::string_view json) {
  auto delta = hawk::model::ParseDeltaJson(json);
  if (!delta.ok()) return;
  CheckRecordRoundTrip(*delta);
  DesiredState state = hawk::model::StateFromDelta(*delta);
  CheckCliSafe(state);
  // Replayed over a snapshot (no undo: a replayed record is never undone).
  DesiredState replayed = Held();
  hawk::model::ApplyDelta(*delta, &replayed);
  CheckCliSafe(replayed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view json(reinterpret_cast<const char*>(data), size);
  (void)hawk::model::ParseReloadRequest(json);
  FuzzPatch(json);
  FuzzRecord(json);

  auto state = hawk::model::ParseDesiredState(json);
  // Read as the change from a state held (a PUT's path), the document gives the difference of its
  // state, or the same error.
  auto delta = hawk::model::ParseDesiredStateAsDelta(json, Held());
  HAWK_FUZZ_CHECK(delta.status() == state.status(),
                  "a document read as a delta fails otherwise than read as a state");
  if (!state.ok()) return 0;
  HAWK_FUZZ_CHECK(*delta == hawk::model::DiffStates(Held(), *state),
                  "a document read as a delta is not the difference of its state");
  CheckCliSafe(*state);
  CheckCanonicalRoundTrip(*state);
  hawk::model::SnapshotSize counted;
  counted.Reset(*state);
  HAWK_FUZZ_CHECK(counted.bytes() == SnapshotBytes(*state),
                  "the snapshot size counted for a state is not its snapshot's");
  return 0;
}
