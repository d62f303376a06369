#pragma once

// The JSON reading kit every request codec shares (simdjson On-Demand, error-code API): typed reads
// that fail with an InvalidArgument naming the field's JSON path (`backends[0].servers[1].port:
// must be an integer in 1..65535, got "x"`), and the proto3 JSON mapping's rules: lowerCamelCase
// names, unknown fields and duplicate keys are errors, `null` means absent, int64 may be a decimal
// string. Client values shown in messages are quoted, escaped and cut (Quote).
//
// On-Demand rather than the DOM: simdjson indexes the document's structural characters (4 bytes
// each) and a Reader walks that index once, in document order, without building a tape of the
// whole document. A whole-state PUT of 5.4 MB so touches its body and that index (~4.5 MiB) where
// the DOM touched ~17 MiB (bench/put_memory). Strings without a backslash (nearly all) are read
// where they are in the document; the others are unescaped into the Reader's own arena, so the
// parser's string buffer, which would hold a copy of every string read, is never written.
//
// What the DOM gave for free and the Reader keeps:
//   - A document that is not JSON is an error about the whole document (`<what> is not valid
//     JSON: …`, no field) whatever else is wrong with it. On-Demand checks only what it reads, so
//     when a read fails, the whole document is validated (one more pass) before the read's error
//     is returned; a read that succeeds has read every value, so the document was JSON.
//   - A list over its limit is reported as such, before any error in its items. Counting costs a
//     pass over the list, so ForEachItem counts only when an item fails or the limit is passed
//     (and Size when a caller wants the count up front).
//   - Looking again: NameMember, FirstIndexOf and StringBytes read a container again from its
//     start (On-Demand's reset()).
//
// Values are iterators into the document: read each one once, in order, and pass it by
// reference. Views of strings stay valid as long as the Reader (ReadObject's callback) runs.
//
// Paths are built only when an error needs one: a 5 MB document of 100,000 entries is read
// without allocating a path string per field. The parts other modules' interfaces name (Path and
// the errors: json_path.h; JsonInput and DocumentParser: json_input.h) live apart, so that
// including them does not include simdjson.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "agent/base/status_field.h"
#include "agent/base/status_macros.h"
#include "agent/model/json_input.h"
#include "agent/model/json_path.h"
#include "simdjson.h"

namespace hawk::model::json {

using simdjson::ondemand::array;
using simdjson::ondemand::json_type;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

inline absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// "a number", "an object", … for "must be …, got …".
const char* TypeName(json_type type);

// A decimal integer in a string: an optional '-', then digits without a leading zero.
bool ParseDecimalString(absl::string_view s, int64_t* out);

// Names seen so far in one list, with the index that first used them (for "also entries[1]").
// The views point into the document or the Reader's arena, which outlive the read.
using SeenNames = absl::flat_hash_map<absl::string_view, size_t>;

// Records `name` (found at `index` of the list `list_name`) and rejects a second occurrence.
absl::Status CheckUnique(SeenNames* seen, absl::string_view name, size_t index, const Path& path,
                         absl::string_view what, absl::string_view list_name);
// The message for a second occurrence of `name`, first seen at `list_name[first_index]`.
absl::Status DuplicateError(const Path& path, absl::string_view what, absl::string_view name,
                            absl::string_view list_name, size_t first_index);

// An array and its limit: what AsArray gives and ForEachItem reads.
struct List {
  array items;
  size_t max = 0;
  absl::string_view what;  // "servers", "entries", …: what a message calls the items
};

// Reads one document. Not thread-safe; one per document (ReadObject makes it).
class Reader {
 public:
  // Parses `input` (with its parser, or one of its own) and hands the root object to `read`.
  // Errors, in this order: `<what> is not valid JSON: …` (any bytes: not JSON, invalid UTF-8);
  // `<what> must be a JSON object, got …`; then `read`'s (the first in document order).
  static absl::Status ReadObject(const JsonInput& input, absl::string_view what,
                                 absl::FunctionRef<absl::Status(Reader&, object&)> read);

  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  absl::Status AsObject(value& v, const Path& path, object* out);
  // An array of at most `max` `what`s (the limit is checked as it is read: ForEachItem, Size).
  absl::Status AsArray(value& v, const Path& path, size_t max, absl::string_view what, List* out);
  // The number of items, counted now (a pass over the list), and the limit checked.
  absl::Status Size(List& list, const Path& path, size_t* size);
  absl::Status AsString(value& v, const Path& path, absl::string_view* out);
  absl::Status AsBool(value& v, const Path& path, bool* out);
  // An integer field in [min, max]: a JSON integer (no fraction or exponent) or a decimal string.
  absl::Status AsInteger(value& v, const Path& path, int64_t min, int64_t max, int64_t* out);
  // `v`'s type, without reading it.
  absl::Status TypeOf(value& v, json_type* out);

  // Iterates over the members of `obj`: `known` lists the accepted field names (at most 32); a
  // duplicate or an unknown name is an error; null members are skipped (proto3: null is the
  // default). `handle(key, value&, path)` returns a Status. Callers name the handler before the
  // call: written inside RETURN_IF_ERROR(...), its own RETURN_IF_ERRORs would shadow the macro's
  // variable.
  template <typename Handler>
  absl::Status ForEachMember(object& obj, const Path& path,
                             absl::Span<const std::string_view> known, Handler&& handle);
  // Iterates over the items of `list`: `handle(value&, index, path)` returns a Status. A list over
  // its limit fails with that, whatever its items hold.
  template <typename Handler>
  absl::Status ForEachItem(List& list, const Path& path, Handler&& handle);

  // Reads the member `name` of `obj` again, from the object's start (`read(value&)` returns a
  // Status): for a member read out of document order. Absent: `read` is not called.
  template <typename F>
  absl::Status ReadMemberAgain(object& obj, absl::string_view name, F&& read);

  // Looking again (each leaves the container at its start, to be read in order after):
  // The first member "name" of `obj` when it is a string, else "".
  absl::string_view NameMember(object& obj);
  // The index of the first item of `items` whose string member `field` (or the item itself, when
  // `field` is empty) equals `text`: for "(also entries[3])" once a duplicate is found.
  size_t FirstIndexOf(List& list, absl::string_view field, absl::string_view text);
  // An upper bound of the bytes of the strings in `items` (strings, or objects' string members),
  // for one allocation of a table instead of doubling copies. Malformed items count nothing.
  size_t StringBytes(List& list);

 private:
  Reader(simdjson::ondemand::parser* parser, const char* end, absl::string_view what);

  absl::Status ReadRoot(simdjson::ondemand::document& doc,
                        absl::FunctionRef<absl::Status(Reader&, object&)> read);
  // Validates the whole document: reads every value, as the DOM's parse does (its error codes,
  // its depth limit).
  simdjson::error_code Validate(simdjson::ondemand::document& doc);
  simdjson::error_code ValidateObject(object& obj, size_t depth);
  simdjson::error_code ValidateArray(array& items, size_t depth);
  simdjson::error_code ValidateValue(value& v, size_t depth);
  // An error of simdjson's while reading: the document is not valid JSON (ReadObject then
  // reports what the validation finds).
  absl::Status NotJson(simdjson::error_code error) const;
  // `status` (an item's error, or the iteration's), unless `list` is over its limit.
  absl::Status LimitOr(List& list, const Path& path, absl::Status status);
  // A string's content, from simdjson's view of it (just after its opening quote): in place
  // when it holds no backslash, else unescaped into the arena.
  simdjson::error_code Unescaped(simdjson::ondemand::raw_json_string raw, absl::string_view* out);
  // Unescapes into the arena a string of at most `raw_size` bytes in the document.
  simdjson::error_code Unescape(simdjson::ondemand::raw_json_string raw, size_t raw_size,
                                absl::string_view* out);
  simdjson::error_code Key(simdjson::ondemand::field& field, absl::string_view* out);
  // A string value, or false (and `v` unread) when it is not a string.
  simdjson::error_code TryString(value& v, bool* is_string, absl::string_view* out);
  char* Allocate(size_t bytes);

  simdjson::ondemand::parser* parser_;
  const char* end_;  // the end of the document
  absl::string_view what_;
  // Unescaped strings: blocks that never move, so views stay valid.
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* free_ = nullptr;
  size_t free_bytes_ = 0;
};

template <typename Handler>
absl::Status Reader::ForEachMember(object& obj, const Path& path,
                                   absl::Span<const std::string_view> known, Handler&& handle) {
  uint32_t seen = 0;
  for (auto member : obj) {
    simdjson::ondemand::field field;
    if (simdjson::error_code error = std::move(member).get(field); error != simdjson::SUCCESS) {
      return NotJson(error);
    }
    // A known name as written (no escape): compared where it is, without finding its end.
    absl::string_view key;
    uint32_t bit = 1;
    bool found = false;
    for (std::string_view name : known) {
      if (field.key().unsafe_is_equal(name)) {
        key = View(name);
        found = true;
        break;
      }
      bit <<= 1;
    }
    if (!found) {  // unknown, or known but written with escapes
      if (simdjson::error_code error = Key(field, &key); error != simdjson::SUCCESS) {
        return NotJson(error);
      }
      bit = 1;
      for (std::string_view name : known) {
        if (View(name) == key) {
          found = true;
          break;
        }
        bit <<= 1;
      }
    }
    Path at = path.Field(key);
    if (!found) return Error(at, "unknown field");
    if (seen & bit) return Error(at, "duplicate key in the same object");
    seen |= bit;
    bool is_null = false;
    if (simdjson::error_code error = field.value().is_null().get(is_null);
        error != simdjson::SUCCESS) {
      return NotJson(error);
    }
    if (is_null) continue;
    RETURN_IF_ERROR(handle(std::string_view(key.data(), key.size()), field.value(), at));
  }
  return absl::OkStatus();
}

template <typename Handler>
absl::Status Reader::ForEachItem(List& list, const Path& path, Handler&& handle) {
  size_t i = 0;
  for (auto item : list.items) {
    value v;
    if (simdjson::error_code error = std::move(item).get(v); error != simdjson::SUCCESS) {
      return LimitOr(list, path, NotJson(error));
    }
    if (i == list.max) return LimitOr(list, path, absl::OkStatus());  // one too many
    if (absl::Status status = handle(v, i, path.At(i)); !status.ok()) {
      return LimitOr(list, path, std::move(status));
    }
    ++i;
  }
  return absl::OkStatus();
}

template <typename F>
absl::Status Reader::ReadMemberAgain(object& obj, absl::string_view name, F&& read) {
  if (simdjson::error_code error = obj.reset().error(); error != simdjson::SUCCESS) {
    return NotJson(error);
  }
  for (auto member : obj) {
    simdjson::ondemand::field field;
    absl::string_view key;
    simdjson::error_code error = std::move(member).get(field);
    if (error == simdjson::SUCCESS) error = Key(field, &key);
    if (error != simdjson::SUCCESS) return NotJson(error);
    if (key == name) return read(field.value());
  }
  return absl::OkStatus();
}

}  // namespace hawk::model::json
