#pragma once

// A JSON path and the errors that name one (`backends[0].servers[1].port: must be …`): what the
// validation functions of the model take and return, without the JSON reader (json_read.h) and
// simdjson behind it.

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hawk::model::json {

// A JSON path, as a chain of stack frames: `Path root; Path b = root.Field("backends").At(0);`.
// A Path refers to its parent (and to the key's bytes): it must not outlive them.
class Path {
 public:
  Path() = default;
  Path Field(absl::string_view key) const { return Path(this, key, 0, Kind::kField); }
  Path At(size_t index) const { return Path(this, {}, index, Kind::kIndex); }
  // `backends[0].servers[1].port`, `maps[0]["odd key"]`; "" for the root.
  std::string str() const;

 private:
  enum class Kind { kRoot, kField, kIndex };
  Path(const Path* parent, absl::string_view key, size_t index, Kind kind)
      : parent_(parent), key_(key), index_(index), kind_(kind) {}
  void AppendTo(std::string* out) const;

  const Path* parent_ = nullptr;
  absl::string_view key_;
  size_t index_ = 0;
  Kind kind_ = Kind::kRoot;
};

// InvalidArgument `path: message`, carrying the path as the field (base::FieldOf).
absl::Status Error(const Path& path, absl::string_view message);

// A client value quoted for a message: JSON-escaped, cut after 64 bytes.
std::string Quote(absl::string_view value);
// "space", "'x'", "0x0a".
std::string DescribeByte(unsigned char c);

}  // namespace hawk::model::json
