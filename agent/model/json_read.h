#pragma once

// The JSON reading kit every request codec shares (simdjson DOM, error-code API): typed reads that
// fail with an InvalidArgument naming the field's JSON path (`backends[0].servers[1].port: must be
// an integer in 1..65535, got "x"`), and the proto3 JSON mapping's rules: lowerCamelCase names,
// unknown fields and duplicate keys are errors, `null` means absent, int64 may be a decimal
// string. Client values shown in messages are quoted, escaped and cut (Quote).
//
// Paths are built only when an error needs one: a 5 MB document of 100,000 entries is read
// without allocating a path string per field.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/base/status_field.h"
#include "agent/base/status_macros.h"
#include "simdjson.h"

namespace hawk::model::json {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

inline absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }

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
// "a number", "an object", … for "must be …, got …".
const char* TypeName(element_type type);

absl::Status AsObject(element e, const Path& path, object* out);
// An array of at most `max` `what`s.
absl::Status AsArray(element e, const Path& path, size_t max, absl::string_view what, array* out);
absl::Status AsString(element e, const Path& path, absl::string_view* out);
absl::Status AsBool(element e, const Path& path, bool* out);
// An integer field in [min, max]: a JSON integer (no fraction or exponent) or a decimal string.
absl::Status AsInteger(element e, const Path& path, int64_t min, int64_t max, int64_t* out);
// A decimal integer in a string: an optional '-', then digits without a leading zero.
bool ParseDecimalString(absl::string_view s, int64_t* out);

// Iterates over the members of `obj`: `known` lists the accepted field names (at most 32); a
// duplicate or an unknown name is an error; null members are skipped (proto3: null is the
// default). `handle(key, value, path)` returns a Status. Callers name the handler before the
// call: written inside RETURN_IF_ERROR(...), its own RETURN_IF_ERRORs would shadow the macro's
// variable.
template <typename Handler>
absl::Status ForEachMember(object obj, const Path& path,
                           std::initializer_list<std::string_view> known, Handler&& handle) {
  uint32_t seen = 0;
  for (simdjson::dom::key_value_pair member : obj) {
    Path field = path.Field(View(member.key));
    uint32_t bit = 1;
    bool found = false;
    for (std::string_view name : known) {
      if (name == member.key) {
        found = true;
        break;
      }
      bit <<= 1;
    }
    if (!found) return Error(field, "unknown field");
    if (seen & bit) return Error(field, "duplicate key in the same object");
    seen |= bit;
    if (member.value.is_null()) continue;
    RETURN_IF_ERROR(handle(member.key, member.value, field));
  }
  return absl::OkStatus();
}

// Names seen so far in one list, with the index that first used them (for "also entries[1]").
// The views point into the parser's string buffer, which outlives the parse.
using SeenNames = absl::flat_hash_map<absl::string_view, size_t>;

// Records `name` (found at `index` of the list `list_name`) and rejects a second occurrence.
absl::Status CheckUnique(SeenNames* seen, absl::string_view name, size_t index, const Path& path,
                         absl::string_view what, absl::string_view list_name);
// The message for a second occurrence of `name`, first seen at `list_name[first_index]`.
absl::Status DuplicateError(const Path& path, absl::string_view what, absl::string_view name,
                            absl::string_view list_name, size_t first_index);

// simdjson reads up to this many bytes past the end of a document.
inline constexpr size_t kReadPadding = simdjson::SIMDJSON_PADDING;

// Where a document is parsed. A DocumentParser keeps simdjson's buffers between documents: a
// fresh parser touches ~3 bytes of new memory per byte of JSON, and first touches of pages are
// what a whole-state PUT of several megabytes spends most of its time on. Release() gives the
// buffers back (the owner does it once large documents stop coming).
class DocumentParser {
 public:
  // Parses `json` (any bytes: not JSON, invalid UTF-8 and a non-object root are errors naming
  // `what`); `*root` stays valid until the next Parse or Release. `padded`: kReadPadding
  // readable bytes follow `json`, so it is parsed in place rather than copied.
  absl::Status Parse(absl::string_view json, bool padded, absl::string_view what, object* root);
  void Release();
  // The largest document the buffers currently hold room for (0 after Release).
  size_t capacity() const;

 private:
  std::unique_ptr<simdjson::dom::parser> parser_;
};

// A document that may come with read padding and a parser to reuse (see DocumentParser): what
// the Parse* functions of the model take. Implicit from a string_view: copied, parsed with a
// parser of its own.
struct JsonInput {
  // Implicit on purpose: Parse*(text) copies and uses a parser of its own.
  JsonInput(absl::string_view json) : text(json) {}   // NOLINT
  JsonInput(const std::string& json) : text(json) {}  // NOLINT
  JsonInput(const char* json) : text(json) {}         // NOLINT
  JsonInput(absl::string_view json, bool is_padded, DocumentParser* reuse)
      : text(json), padded(is_padded), parser(reuse) {}
  absl::string_view text;
  bool padded = false;
  DocumentParser* parser = nullptr;
};

// Parses `input` with its parser, or with `*scratch` when it brings none.
absl::Status ParseRootObject(const JsonInput& input, absl::string_view what,
                             DocumentParser* scratch, object* root);

}  // namespace hawk::model::json
