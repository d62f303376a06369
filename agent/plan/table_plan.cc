// Plans one map or ACL (table_plan.h). Pure.

#include "agent/plan/table_plan.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hawk::plan {
namespace {

Action TableAction(ActionKind kind, absl::string_view name) {
  Action action;
  action.kind = kind;
  action.map_or_acl = std::string(name);
  return action;
}

}  // namespace

Action ReplaceTable(bool acl, absl::string_view name, const model::StringTable& content) {
  Action action = TableAction(acl ? ActionKind::kReplaceAcl : ActionKind::kReplaceMap, name);
  action.content = std::make_shared<const model::StringTable>(content);
  return action;
}

namespace {

Action EntryAction(ActionKind kind, absl::string_view table, absl::string_view key,
                   absl::string_view value = {}) {
  Action action = TableAction(kind, table);
  action.key = std::string(key);
  action.value = std::string(value);
  return action;
}

// A set (or upsert) of a map entry. A CLI word cannot be empty, so `set map` cannot carry an
// empty value: that one goes as del + add, whose payload form can.
void PushMapSet(ActionKind kind, absl::string_view map, absl::string_view key,
                absl::string_view value, std::vector<Action>* out) {
  if (value.empty()) {
    out->push_back(EntryAction(ActionKind::kDelMapEntry, map, key));
    out->push_back(EntryAction(ActionKind::kAddMapEntry, map, key, value));
    return;
  }
  out->push_back(EntryAction(kind, map, key, value));
}

std::vector<std::string> SortedKeys(const model::StringTable& table) {
  std::vector<std::string> keys;
  keys.reserve(table.size());
  table.ForEach([&keys](absl::string_view key, absl::string_view) { keys.emplace_back(key); });
  std::sort(keys.begin(), keys.end());
  return keys;
}

// A key per-entry commands cannot name: `set|del map` and `del acl` read a first word that
// starts with '#' as an entry reference (`#0x…`), whatever the escapes.
bool IsReferenceLike(absl::string_view key) { return !key.empty() && key.front() == '#'; }

bool HasBlankInKeys(const model::StringTable& table) {
  bool blank = false;
  table.ForEach([&blank](absl::string_view key, absl::string_view) {
    if (!blank && key.find_first_of(" \t") != absl::string_view::npos) blank = true;
  });
  return blank;
}

bool HasReferenceLikeKeys(const model::StringTable& table) {
  bool found = false;
  table.ForEach([&found](absl::string_view key, absl::string_view) {
    if (IsReferenceLike(key)) found = true;
  });
  return found;
}

// Whether the worker holds exactly the lines "key value" of `desired`, compared as lines (see
// ObservedTable for why a key or value with a blank forces this). `have` must be ambiguous (its
// lines kept) or hold no blank in its values.
bool SameLines(const model::StringTable& desired, const ObservedTable& have) {
  auto holds = [&have](absl::string_view k, absl::string_view v) {
    if (have.ambiguous) return have.lines.Contains(absl::StrCat(k, " ", v));
    absl::optional<absl::string_view> got = have.entries.Find(k);
    return got.has_value() && *got == v;
  };
  size_t observed = have.ambiguous ? have.lines.size() : have.entries.size();
  if (desired.size() != observed) return false;
  bool same = true;
  desired.ForEach([&](absl::string_view k, absl::string_view v) {
    if (same && !holds(k, v)) same = false;
  });
  return same;
}

}  // namespace

void PlanObservedTable(bool acl, const std::string& name, const model::StringTable& want,
                       const ObservedTable* have, const PlanOptions& options, Plan* plan) {
  absl::string_view kind = acl ? "acl" : "map";
  std::string object = absl::StrCat(kind, "/", name);
  if (have == nullptr || !have->present) {
    plan->stale.push_back(StaleItem{object, "", "present", "absent",
                                    absl::StrCat("worker has no ", kind, " ", name)});
    return;
  }
  if (have->duplicates) {
    plan->actions.push_back(ReplaceTable(acl, name, want));
    return;
  }
  if (!acl && (have->ambiguous || HasBlankInKeys(want))) {
    if (!SameLines(want, *have)) plan->actions.push_back(ReplaceTable(acl, name, want));
    return;
  }
  if (HasReferenceLikeKeys(want) || HasReferenceLikeKeys(have->entries)) {
    // Per-entry commands cannot name such keys: compare, and replace when they differ.
    bool same = want == have->entries;
    if (!same) plan->actions.push_back(ReplaceTable(acl, name, want));
    return;
  }
  std::vector<Action> entries;
  for (const auto& [key, value] : want.Sorted()) {
    absl::optional<absl::string_view> got = have->entries.Find(key);
    if (!got) {
      entries.push_back(acl ? EntryAction(ActionKind::kAddAclPattern, name, key)
                            : EntryAction(ActionKind::kAddMapEntry, name, key, value));
    } else if (!acl && *got != value) {
      PushMapSet(ActionKind::kSetMapEntry, name, key, value, &entries);
    }
  }
  for (const auto& [key, unused] : have->entries.Sorted()) {
    if (!want.Contains(key)) {
      entries.push_back(
          EntryAction(acl ? ActionKind::kDelAclPattern : ActionKind::kDelMapEntry, name, key));
    }
  }
  if (model::ReplaceIsCheaper(entries.size(), want.size(), options.entry_lookup)) {
    plan->actions.push_back(ReplaceTable(acl, name, want));
    return;
  }
  for (Action& action : entries) plan->actions.push_back(std::move(action));
}

void PlanPendingTable(bool acl, const std::string& name, const PendingTable& pending,
                      const model::StringTable* want, const PlanOptions& options, Plan* plan) {
  if (pending.dropped || want == nullptr) return;  // no longer managed
  if (pending.replace ||
      model::ReplaceIsCheaper(pending.keys(), want->size(), options.entry_lookup)) {
    plan->actions.push_back(ReplaceTable(acl, name, *want));
    return;
  }
  std::vector<std::string> keys = SortedKeys(pending.existed);
  std::vector<std::string> absent = SortedKeys(pending.was_absent);
  keys.insert(keys.end(), absent.begin(), absent.end());
  std::sort(keys.begin(), keys.end());
  if (std::any_of(keys.begin(), keys.end(),
                  [](const std::string& k) { return IsReferenceLike(k); })) {
    plan->actions.push_back(ReplaceTable(acl, name, *want));
    return;
  }
  for (const std::string& key : keys) {
    absl::optional<absl::string_view> now = want->Find(key);
    absl::optional<absl::string_view> before = pending.existed.Find(key);
    if (acl) {
      if (options.uncertain) {
        // Whatever the cut run left: delete it (a no-op when absent) and add it back if wanted.
        plan->actions.push_back(EntryAction(ActionKind::kDelAclPattern, name, key));
        if (now) plan->actions.push_back(EntryAction(ActionKind::kAddAclPattern, name, key));
      } else if (now && !before) {
        plan->actions.push_back(EntryAction(ActionKind::kAddAclPattern, name, key));
      } else if (!now && before) {
        plan->actions.push_back(EntryAction(ActionKind::kDelAclPattern, name, key));
      }
      continue;
    }
    if (now && before && *now == *before && !options.uncertain) continue;  // changed back
    if (now) {
      if (!options.uncertain && !before) {
        plan->actions.push_back(EntryAction(ActionKind::kAddMapEntry, name, key, *now));
      } else {
        PushMapSet(options.uncertain ? ActionKind::kUpsertMapEntry : ActionKind::kSetMapEntry, name,
                   key, *now, &plan->actions);
      }
    } else if (before || options.uncertain) {
      plan->actions.push_back(EntryAction(ActionKind::kDelMapEntry, name, key));
    }
  }
}

}  // namespace hawk::plan
