#pragma once

// A streaming JSON writer for hawk's responses (simdjson parses, it does not write). Produces
// compact JSON; commas are inserted automatically. Keys are written in the order given: callers
// sort where the output must be deterministic.
//
//   JsonWriter w;
//   w.BeginObject(); w.Key("pid"); w.Int(42); w.EndObject();
//   std::string out = w.Take();

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hawk::base {

// Appends `value` as a JSON string literal (with quotes), escaping what RFC 8259 requires ('"',
// '\\', U+0000..U+001F) and nothing else: a byte of a value never costs more than the 6 bytes of
// a control character's \u escape, and DEL (0x7F) or UTF-8 cost what they cost in a request.
// Bytes that are not valid UTF-8 are replaced by U+FFFD so the output is always valid JSON.
void AppendJsonString(std::string* out, absl::string_view value);
// The size AppendJsonString(out, value) appends, without writing it.
size_t JsonStringSize(absl::string_view value);
// AppendJsonString, and DEL (0x7F) as \u007f too: for quoting a value in a message a person reads
// (an error, a log line), where an invisible byte would hide what was sent.
void AppendJsonStringForDisplay(std::string* out, absl::string_view value);

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(absl::string_view key);
  JsonWriter& String(absl::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Inserts already-serialized JSON as one value.
  JsonWriter& Raw(absl::string_view json);

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void BeforeValue();

  std::string out_;
  // One entry per open container: true once it holds an element (a comma is due).
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace hawk::base
