#pragma once

// What the model's Parse* functions take: a document, whether it comes with simdjson's read
// padding, and the parser to reuse (DocumentParser). Kept apart from the reader (json_read.h) so
// that the modules holding a parser or passing a document along do not include simdjson.

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace simdjson::dom {
class object;
class parser;
}  // namespace simdjson::dom

namespace hawk::model::json {

// simdjson reads up to this many bytes past the end of a document (its SIMDJSON_PADDING, which
// json_read.cc checks this equals).
inline constexpr size_t kReadPadding = 64;

// Where a document is parsed. A DocumentParser keeps simdjson's buffers between documents: a
// fresh parser touches ~3 bytes of new memory per byte of JSON, and first touches of pages are
// what a whole-state PUT of several megabytes spends most of its time on. Release() gives the
// buffers back (the owner does it once large documents stop coming).
class DocumentParser {
 public:
  DocumentParser();
  ~DocumentParser();
  DocumentParser(const DocumentParser&) = delete;
  DocumentParser& operator=(const DocumentParser&) = delete;

  // Parses `json` (any bytes: not JSON, invalid UTF-8 and a non-object root are errors naming
  // `what`); `*root` stays valid until the next Parse or Release. `padded`: kReadPadding
  // readable bytes follow `json`, so it is parsed in place rather than copied.
  absl::Status Parse(absl::string_view json, bool padded, absl::string_view what,
                     simdjson::dom::object* root);
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

}  // namespace hawk::model::json
