#include "agent/plan/written_tables.h"

namespace hawk::plan {

bool WrittenTables::Merge(const model::ChangeSummary& summary, const model::DesiredState& desired,
                          size_t max_objects) {
  since_.Merge(summary, desired);
  return since_.size() <= max_objects;
}

bool WrittenTables::Unchanged(bool acl, const std::string& name) const {
  const Counts& written = acl ? acls_ : maps_;
  const auto& changed = acl ? since_.acls() : since_.maps();
  return written.contains(name) && !changed.contains(name);
}

}  // namespace hawk::plan
