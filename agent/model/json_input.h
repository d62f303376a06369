#pragma once

// What the model's Parse* functions take: a document, whether it comes with simdjson's read
// padding, and the parser to reuse (DocumentParser). Kept apart from the reader (json_read.h) so
// that the modules holding a parser or passing a document along do not include simdjson.

#include <cstddef>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace hawk::model::json {

// simdjson reads up to this many bytes past the end of a document (its SIMDJSON_PADDING, which
// json_read.cc checks this equals).
inline constexpr size_t kReadPadding = 64;

// Where a document is parsed: simdjson's On-Demand parser, whose buffers (an index of the
// document's structural characters, 4 bytes each: ~4.5 MiB for a whole-state document of
// 5.4 MB) are kept between documents. A fresh parser first touches those pages, and first touches
// are what a whole-state PUT of several megabytes would spend most of its time on; Release()
// gives the buffers back (the owner does it once large documents stop coming).
class DocumentParser {
 public:
  DocumentParser();
  ~DocumentParser();
  DocumentParser(const DocumentParser&) = delete;
  DocumentParser& operator=(const DocumentParser&) = delete;

  void Release();
  // The largest document the buffers currently hold room for (0 after Release).
  size_t capacity() const;

 private:
  friend class Reader;  // json_read.h: parses with it
  struct Parser;        // simdjson's, kept out of this header
  std::unique_ptr<Parser> parser_;
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
