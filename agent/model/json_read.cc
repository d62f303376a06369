#include "agent/model/json_read.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/base/json_writer.h"
#include "agent/model/json_read_internal.h"

namespace hawk::model::json {
const char* TypeName(json_type type) {
  switch (type) {
    case json_type::array:
      return "an array";
    case json_type::object:
      return "an object";
    case json_type::number:
      return "a number";
    case json_type::string:
      return "a string";
    case json_type::boolean:
      return "a boolean";
    case json_type::null:
      return "null";
  }
  return "an unknown value";
}

// proto3 accepts "42" for integer fields.
bool ParseDecimalString(absl::string_view s, int64_t* out) {
  absl::string_view digits = s;
  if (!digits.empty() && digits[0] == '-') digits.remove_prefix(1);
  if (digits.empty() || digits.size() > 19) return false;
  if (!std::all_of(digits.begin(), digits.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  if (digits[0] == '0' && digits.size() > 1) return false;
  return absl::SimpleAtoi(s, out);
}

absl::Status DuplicateError(const Path& path, absl::string_view what, absl::string_view name,
                            absl::string_view list_name, size_t first_index) {
  return Error(path, absl::StrCat("duplicate ", what, " ", Quote(name), " (also ", list_name, "[",
                                  first_index, "])"));
}

absl::Status CheckUnique(SeenNames* seen, absl::string_view name, size_t index, const Path& path,
                         absl::string_view what, absl::string_view list_name) {
  auto [it, inserted] = seen->emplace(name, index);
  if (!inserted) return DuplicateError(path, what, name, list_name, it->second);
  return absl::OkStatus();
}

static_assert(kReadPadding == simdjson::SIMDJSON_PADDING,
              "json_input.h's kReadPadding must be simdjson's padding");

namespace {

using simdjson::SUCCESS;
using simdjson::ondemand::document;
using simdjson::ondemand::field;
using simdjson::ondemand::raw_json_string;

constexpr size_t kParserDepth = internal::kMaxDepth + 2;

// The closing quote of the string whose content starts at `begin`, searched before `end`.
// simdjson's first stage has found every string's end (an unclosed one is an error), with the
// rule read here: a backslash escapes the byte after it. nullptr past `end` (not reached).
const char* StringEnd(const char* begin, const char* end, bool* escaped) {
  const char* p = begin;
  while (p < end && *p != '"' && *p != '\\') ++p;  // strings are short: no call per string
  *escaped = p < end && *p == '\\';
  while (p < end && *p != '"') p += *p == '\\' ? 2 : 1;
  return p < end ? p : nullptr;
}

}  // namespace

struct DocumentParser::Parser {
  simdjson::ondemand::parser parser;
};

DocumentParser::DocumentParser() = default;
DocumentParser::~DocumentParser() = default;

void DocumentParser::Release() { parser_.reset(); }

size_t DocumentParser::capacity() const {
  return parser_ == nullptr ? 0 : parser_->parser.capacity();
}

Reader::Reader(simdjson::ondemand::parser* parser, const char* end, absl::string_view what)
    : parser_(parser), end_(end), what_(what) {}

absl::Status Reader::ReadObject(const JsonInput& input, absl::string_view what,
                                absl::FunctionRef<absl::Status(Reader&, object&)> read) {
  DocumentParser scratch;
  DocumentParser* owner = input.parser != nullptr ? input.parser : &scratch;
  if (owner->parser_ == nullptr) owner->parser_ = std::make_unique<DocumentParser::Parser>();
  simdjson::ondemand::parser& parser = owner->parser_->parser;
  const char* data = input.text.data();
  size_t size = input.text.size();
  simdjson::padded_string copy;  // what the read's views point into: lives as long as the read
  if (!input.padded) {
    copy = simdjson::padded_string(data, size);
    data = copy.data();
  }
  auto not_json = [what](simdjson::error_code error) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not valid JSON: ", simdjson::error_message(error)));
  };
  // Room for the containers Validate opens before it finds one too deep (simdjson's own checks,
  // in builds without NDEBUG, assert that none goes past the parser's depth).
  if (parser.capacity() < size || parser.max_depth() < kParserDepth) {
    if (simdjson::error_code error = parser.allocate(size, kParserDepth); error != SUCCESS) {
      return not_json(error);
    }
  }
  document doc;
  if (simdjson::error_code error = parser.iterate(data, size, size + kReadPadding).get(doc);
      error != SUCCESS) {
    return not_json(error);
  }
  Reader reader(&parser, data + size, what);
  absl::Status status = reader.ReadRoot(doc, read);
  if (status.ok()) return status;
  // The read checked only what it reached: whether the document is JSON comes first. (Its views
  // are no longer needed: the document is indexed again, from the start.)
  if (simdjson::error_code error = parser.iterate(data, size, size + kReadPadding).get(doc);
      error != SUCCESS) {
    return not_json(error);
  }
  if (simdjson::error_code error = reader.Validate(doc); error != SUCCESS) return not_json(error);
  return status;
}

absl::Status Reader::ReadRoot(document& doc,
                              absl::FunctionRef<absl::Status(Reader&, object&)> read) {
  json_type type;
  if (simdjson::error_code error = doc.type().get(type); error != SUCCESS) return NotJson(error);
  if (type != json_type::object) {
    return absl::InvalidArgumentError(
        absl::StrCat(what_, " must be a JSON object, got ", TypeName(type)));
  }
  object root;
  if (simdjson::error_code error = doc.get_object().get(root); error != SUCCESS) {
    return NotJson(error);
  }
  RETURN_IF_ERROR(read(*this, root));
  if (internal::AtEnd(doc)) return absl::OkStatus();
  // The read went back to look again (NameMember…) and ended inside the root: skip to its end.
  if (simdjson::error_code error = root.reset().error(); error != SUCCESS) return NotJson(error);
  for (auto member : root) {
    if (simdjson::error_code error = member.error(); error != SUCCESS) return NotJson(error);
  }
  return internal::AtEnd(doc) ? absl::OkStatus() : NotJson(simdjson::TAPE_ERROR);
}

absl::Status Reader::NotJson(simdjson::error_code error) const {
  return absl::InvalidArgumentError(
      absl::StrCat(what_, " is not valid JSON: ", simdjson::error_message(error)));
}

char* Reader::Allocate(size_t bytes) {
  if (bytes > free_bytes_) {
    size_t size = std::max<size_t>(bytes, 16 << 10);
    blocks_.emplace_back(new char[size]);  // not value-initialized: no page touched in vain
    free_ = blocks_.back().get();
    free_bytes_ = size;
  }
  return free_;
}

simdjson::error_code Reader::Unescaped(raw_json_string raw, absl::string_view* out) {
  const char* begin = raw.raw();
  bool escaped = false;
  const char* end = StringEnd(begin, end_, &escaped);
  if (end == nullptr) return simdjson::UNCLOSED_STRING;
  if (!escaped) {
    *out = absl::string_view(begin, end - begin);
    return SUCCESS;
  }
  return Unescape(raw, end - begin, out);
}

simdjson::error_code Reader::Unescape(raw_json_string raw, size_t raw_size,
                                      absl::string_view* out) {
  // Unescaping writes at most the raw size, in blocks that may run kReadPadding bytes over.
  uint8_t* dst = reinterpret_cast<uint8_t*>(Allocate(raw_size + kReadPadding));
  std::string_view text;
  SIMDJSON_TRY(parser_->unescape(raw, dst).get(text));
  free_ += text.size();
  free_bytes_ -= text.size();
  *out = View(text);
  return SUCCESS;
}

simdjson::error_code Reader::Key(field& f, absl::string_view* out) {
  return Unescaped(f.key(), out);
}

simdjson::error_code Reader::TryString(value& v, bool* is_string, absl::string_view* out) {
  // From the opening quote to the next structural character: the string, then any whitespace.
  std::string_view token = v.raw_json_token();
  raw_json_string raw;
  simdjson::error_code error = v.get_raw_json_string().get(raw);
  *is_string = error != simdjson::INCORRECT_TYPE;
  if (!*is_string) return SUCCESS;
  SIMDJSON_TRY(error);
  size_t n = token.size();
  while (n > 1 && internal::IsJsonSpace(token[n - 1])) --n;
  if (n < 2 || token[n - 1] != '"') return Unescaped(raw, out);  // not expected: the long way
  absl::string_view content(token.data() + 1, n - 2);
  if (content.find('\\') == absl::string_view::npos) {
    *out = content;
    return SUCCESS;
  }
  return Unescape(raw, content.size(), out);
}

absl::Status Reader::TypeOf(value& v, json_type* out) {
  if (simdjson::error_code error = v.type().get(*out); error != SUCCESS) return NotJson(error);
  return absl::OkStatus();
}

absl::Status Reader::AsObject(value& v, const Path& path, object* out) {
  simdjson::error_code error = v.get_object().get(*out);
  if (error == simdjson::INCORRECT_TYPE) {
    json_type type;
    RETURN_IF_ERROR(TypeOf(v, &type));
    return Error(path, absl::StrCat("must be an object, got ", TypeName(type)));
  }
  if (error != SUCCESS) return NotJson(error);
  return absl::OkStatus();
}

absl::Status Reader::AsArray(value& v, const Path& path, size_t max, absl::string_view what,
                             List* out) {
  simdjson::error_code error = v.get_array().get(out->items);
  if (error == simdjson::INCORRECT_TYPE) {
    json_type type;
    RETURN_IF_ERROR(TypeOf(v, &type));
    return Error(path, absl::StrCat("must be an array, got ", TypeName(type)));
  }
  if (error != SUCCESS) return NotJson(error);
  out->max = max;
  out->what = what;
  return absl::OkStatus();
}

namespace {

// Counts the items from the list's start.
simdjson::error_code Count(List& list, size_t* size) {
  SIMDJSON_TRY(list.items.reset().error());
  return list.items.count_elements().get(*size);
}

absl::Status LimitError(const List& list, const Path& path, size_t size) {
  // Shown as the DOM reader this replaced counted, up to 0xFFFFFF (far above every limit).
  size_t shown = std::min<size_t>(size, 0xFFFFFF);
  return Error(path, absl::StrCat("must hold at most ", list.max, " ", list.what, ", got ", shown,
                                  shown == 0xFFFFFF ? " or more" : ""));
}

}  // namespace

absl::Status Reader::Size(List& list, const Path& path, size_t* size) {
  if (simdjson::error_code error = Count(list, size); error != SUCCESS) return NotJson(error);
  return *size > list.max ? LimitError(list, path, *size) : absl::OkStatus();
}

absl::Status Reader::LimitOr(List& list, const Path& path, absl::Status status) {
  size_t size = 0;
  simdjson::error_code error = Count(list, &size);
  if (error != SUCCESS) return status.ok() ? NotJson(error) : status;  // the document is broken
  return size > list.max ? LimitError(list, path, size) : status;
}

absl::Status Reader::AsString(value& v, const Path& path, absl::string_view* out) {
  bool is_string = false;
  if (simdjson::error_code error = TryString(v, &is_string, out); error != SUCCESS) {
    return NotJson(error);
  }
  if (!is_string) {
    json_type type;
    RETURN_IF_ERROR(TypeOf(v, &type));
    return Error(path, absl::StrCat("must be a string, got ", TypeName(type)));
  }
  return absl::OkStatus();
}

absl::Status Reader::AsBool(value& v, const Path& path, bool* out) {
  json_type type;
  RETURN_IF_ERROR(TypeOf(v, &type));
  if (type != json_type::boolean) {
    return Error(path, absl::StrCat("must be a boolean, got ", TypeName(type)));
  }
  if (simdjson::error_code error = v.get_bool().get(*out); error != SUCCESS) {
    return NotJson(error);
  }
  return absl::OkStatus();
}

absl::Status Reader::AsInteger(value& v, const Path& path, int64_t min, int64_t max, int64_t* out) {
  auto fail = [&](absl::string_view got) {
    return Error(path, absl::StrCat("must be an integer in ", min, "..", max, ", got ", got));
  };
  json_type type;
  RETURN_IF_ERROR(TypeOf(v, &type));
  int64_t result = 0;
  switch (type) {
    case json_type::number: {
      simdjson::ondemand::number number;
      if (simdjson::error_code error = v.get_number().get(number); error != SUCCESS) {
        return NotJson(error);
      }
      switch (number.get_number_type()) {
        case simdjson::ondemand::number_type::signed_integer:
          result = number.get_int64();
          if (result < min || result > max) return fail(absl::StrCat(result));
          break;
        case simdjson::ondemand::number_type::unsigned_integer:  // above INT64_MAX
          return fail(absl::StrCat(number.get_uint64()));
        case simdjson::ondemand::number_type::floating_point_number: {
          // Stricter than proto3, which takes 80.0 and 8e1: a port written that way is a client
          // bug.
          double d = number.get_double();
          bool integral = std::isfinite(d) && std::trunc(d) == d;
          return fail(absl::StrCat(d, integral ? " written with a fraction or exponent" : ""));
        }
      }
      break;
    }
    case json_type::string: {
      absl::string_view text;
      RETURN_IF_ERROR(AsString(v, path, &text));
      if (!ParseDecimalString(text, &result) || result < min || result > max) {
        return fail(Quote(text));
      }
      break;
    }
    default:
      return fail(TypeName(type));
  }
  *out = result;
  return absl::OkStatus();
}

absl::string_view Reader::NameMember(object& obj) {
  absl::string_view name;
  for (auto member : obj) {
    field f;
    absl::string_view key;
    if (std::move(member).get(f) != SUCCESS || Key(f, &key) != SUCCESS) break;
    if (key != "name") continue;
    bool is_string = false;
    absl::string_view text;
    if (TryString(f.value(), &is_string, &text) == SUCCESS && is_string) name = text;
    break;
  }
  (void)obj.reset();  // an error shows again when the object is read
  return name;
}

size_t Reader::FirstIndexOf(List& list, absl::string_view member, absl::string_view text) {
  if (list.items.reset().error() != SUCCESS) return 0;
  size_t i = 0;
  for (auto item : list.items) {
    value v;
    if (std::move(item).get(v) != SUCCESS) break;
    bool is_string = false;
    absl::string_view s;
    if (member.empty()) {
      if (TryString(v, &is_string, &s) != SUCCESS) break;
    } else if (object obj; v.get_object().get(obj) == SUCCESS) {
      for (auto m : obj) {
        field f;
        absl::string_view key;
        if (std::move(m).get(f) != SUCCESS || Key(f, &key) != SUCCESS) break;
        if (key != member) continue;
        if (TryString(f.value(), &is_string, &s) != SUCCESS) is_string = false;
        break;
      }
    }
    if (is_string && s == text) return i;
    ++i;
  }
  return i;
}

size_t Reader::StringBytes(List& list) {
  size_t bytes = 0;
  auto add = [&](value& v) {
    raw_json_string raw;
    bool escaped = false;
    const char* end = nullptr;
    if (v.get_raw_json_string().get(raw) == SUCCESS) end = StringEnd(raw.raw(), end_, &escaped);
    if (end != nullptr) bytes += end - raw.raw();
  };
  for (auto item : list.items) {
    value v;
    json_type type;
    if (std::move(item).get(v) != SUCCESS || v.type().get(type) != SUCCESS) break;
    if (type == json_type::string) {
      add(v);
    } else if (object obj; type == json_type::object && v.get_object().get(obj) == SUCCESS) {
      for (auto m : obj) {
        field f;
        if (std::move(m).get(f) != SUCCESS) break;
        add(f.value());
      }
    }
  }
  (void)list.items.reset();
  return bytes;
}

}  // namespace hawk::model::json
