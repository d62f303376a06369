#pragma once

// The JSON reading kit every request codec shares (simdjson DOM, error-code API): typed reads that
// fail with an InvalidArgument naming the field's JSON path (`backends[0].servers[1].port: must be
// an integer in 1..65535, got "x"`), and the proto3 JSON mapping's rules: lowerCamelCase names,
// unknown fields and duplicate keys are errors, `null` means absent, int64 may be a decimal
// string. Client values shown in messages are quoted, escaped and cut (Quote).
//
// Paths are built only when an error needs one: a 5 MB document of 100,000 entries is read
// without allocating a path string per field. The parts other modules' interfaces name (Path and
// the errors: json_path.h; JsonInput and DocumentParser: json_input.h) live apart, so that
// including them does not include simdjson.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/base/status_field.h"
#include "agent/base/status_macros.h"
#include "agent/model/json_input.h"
#include "agent/model/json_path.h"
#include "simdjson.h"

namespace hawk::model::json {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

inline absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }

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

// Parses `input` with its parser, or with `*scratch` when it brings none.
absl::Status ParseRootObject(const JsonInput& input, absl::string_view what,
                             DocumentParser* scratch, object* root);

}  // namespace hawk::model::json
