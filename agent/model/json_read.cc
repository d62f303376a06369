#include "agent/model/json_read.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/base/json_writer.h"

namespace hawk::model::json {
namespace {

bool IsPlainKey(absl::string_view key) {
  if (key.empty() || absl::ascii_isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

void Path::AppendTo(std::string* out) const {
  if (parent_ != nullptr) parent_->AppendTo(out);
  switch (kind_) {
    case Kind::kRoot:
      return;
    case Kind::kIndex:
      absl::StrAppend(out, "[", index_, "]");
      return;
    case Kind::kField:
      // `parent.key`, or `parent["odd key"]` when the key is not a plain identifier (the path is
      // echoed to clients and logs, so a hostile key stays quoted and escaped).
      if (IsPlainKey(key_)) {
        if (!out->empty()) out->push_back('.');
        out->append(key_.data(), key_.size());
      } else {
        out->push_back('[');
        base::AppendJsonStringForDisplay(out, key_);
        out->push_back(']');
      }
      return;
  }
}

std::string Path::str() const {
  std::string out;
  AppendTo(&out);
  return out;
}

absl::Status Error(const Path& path, absl::string_view message) {
  return base::FieldError(path.str(), message);
}

std::string Quote(absl::string_view value) {
  constexpr size_t kMaxShown = 64;
  std::string out;
  if (value.size() <= kMaxShown) {
    base::AppendJsonStringForDisplay(&out, value);
    return out;
  }
  size_t cut = kMaxShown;
  // Do not split a UTF-8 sequence (continuation bytes are 10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  base::AppendJsonStringForDisplay(&out, value.substr(0, cut));
  out.insert(out.size() - 1, "...");
  absl::StrAppend(&out, " (", value.size(), " bytes)");
  return out;
}

std::string DescribeByte(unsigned char c) {
  if (c == ' ') return "space";
  if (c > 0x20 && c < 0x7F) return absl::StrFormat("'%c'", c);
  return absl::StrFormat("0x%02x", c);
}

const char* TypeName(element_type type) {
  switch (type) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "an unknown value";
}

absl::Status AsObject(element e, const Path& path, object* out) {
  if (e.get_object().get(*out) != simdjson::SUCCESS) {
    return Error(path, absl::StrCat("must be an object, got ", TypeName(e.type())));
  }
  return absl::OkStatus();
}

absl::Status AsArray(element e, const Path& path, size_t max, absl::string_view what, array* out) {
  if (e.get_array().get(*out) != simdjson::SUCCESS) {
    return Error(path, absl::StrCat("must be an array, got ", TypeName(e.type())));
  }
  if (size_t size = out->size(); size > max) {
    // size() saturates at 0xFFFFFF, far above every limit.
    return Error(path, absl::StrCat("must hold at most ", max, " ", what, ", got ", size,
                                    size == 0xFFFFFF ? " or more" : ""));
  }
  return absl::OkStatus();
}

absl::Status AsString(element e, const Path& path, absl::string_view* out) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) {
    return Error(path, absl::StrCat("must be a string, got ", TypeName(e.type())));
  }
  *out = View(s);
  return absl::OkStatus();
}

absl::Status AsBool(element e, const Path& path, bool* out) {
  if (e.get_bool().get(*out) != simdjson::SUCCESS) {
    return Error(path, absl::StrCat("must be a boolean, got ", TypeName(e.type())));
  }
  return absl::OkStatus();
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

absl::Status AsInteger(element e, const Path& path, int64_t min, int64_t max, int64_t* out) {
  auto fail = [&](absl::string_view got) {
    return Error(path, absl::StrCat("must be an integer in ", min, "..", max, ", got ", got));
  };
  int64_t value = 0;
  switch (e.type()) {
    case element_type::INT64:
      value = e.get_int64().value_unsafe();
      if (value < min || value > max) return fail(absl::StrCat(value));
      break;
    case element_type::UINT64:  // above INT64_MAX: out of every range here
      return fail(absl::StrCat(e.get_uint64().value_unsafe()));
    case element_type::DOUBLE: {
      // Stricter than proto3, which takes 80.0 and 8e1: a port written that way is a client bug.
      double d = e.get_double().value_unsafe();
      bool integral = std::isfinite(d) && std::trunc(d) == d;
      return fail(absl::StrCat(d, integral ? " written with a fraction or exponent" : ""));
    }
    case element_type::STRING: {
      absl::string_view text = View(e.get_string().value_unsafe());
      if (!ParseDecimalString(text, &value) || value < min || value > max) {
        return fail(Quote(text));
      }
      break;
    }
    default:
      return fail(TypeName(e.type()));
  }
  *out = value;
  return absl::OkStatus();
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

DocumentParser::DocumentParser() = default;
DocumentParser::~DocumentParser() = default;

absl::Status DocumentParser::Parse(absl::string_view json, bool padded, absl::string_view what,
                                   object* root) {
  if (parser_ == nullptr) parser_ = std::make_unique<simdjson::dom::parser>();
  const char* data = json.data();
  simdjson::padded_string copy;  // the DOM keeps no pointer into its input: freed on return
  if (!padded) {
    copy = simdjson::padded_string(json.data(), json.size());
    data = copy.data();
  }
  element doc;
  simdjson::error_code error =
      parser_->parse(data, json.size(), /*realloc_if_needed=*/false).get(doc);
  if (error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not valid JSON: ", simdjson::error_message(error)));
  }
  if (doc.get_object().get(*root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a JSON object, got ", TypeName(doc.type())));
  }
  return absl::OkStatus();
}

void DocumentParser::Release() { parser_.reset(); }

size_t DocumentParser::capacity() const { return parser_ == nullptr ? 0 : parser_->capacity(); }

absl::Status ParseRootObject(const JsonInput& input, absl::string_view what,
                             DocumentParser* scratch, object* root) {
  DocumentParser* parser = input.parser != nullptr ? input.parser : scratch;
  return parser->Parse(input.text, input.padded, what, root);
}

}  // namespace hawk::model::json
