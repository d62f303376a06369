#include "agent/base/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hawk::base {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = 0;
  uint32_t min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// The escape of ASCII byte `c` in a JSON string, or "" when it stands for itself.
absl::string_view ShortEscape(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      return "";
  }
}

constexpr size_t kUnicodeEscapeBytes = 6;                   // \u00XX
constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void AppendEscaped(std::string* out, absl::string_view value, bool escape_del) {
  out->push_back('"');
  for (size_t i = 0; i < value.size();) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(value, i);
      if (n == 0) {
        out->append(kReplacement.data(), kReplacement.size());
        ++i;
      } else {
        out->append(value.data() + i, n);
        i += n;
      }
      continue;
    }
    absl::string_view escape = ShortEscape(c);
    if (!escape.empty()) {
      out->append(escape.data(), escape.size());
    } else if (c < 0x20 || (escape_del && c == 0x7F)) {
      absl::StrAppendFormat(out, "\\u%04x", c);
    } else {
      out->push_back(static_cast<char>(c));
    }
    ++i;
  }
  out->push_back('"');
}

}  // namespace

void AppendJsonString(std::string* out, absl::string_view value) {
  AppendEscaped(out, value, /*escape_del=*/false);
}

void AppendJsonStringForDisplay(std::string* out, absl::string_view value) {
  AppendEscaped(out, value, /*escape_del=*/true);
}

size_t JsonStringSize(absl::string_view value) {
  size_t size = 2;  // the quotes
  for (size_t i = 0; i < value.size();) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(value, i);
      size += n == 0 ? kReplacement.size() : n;
      i += n == 0 ? 1 : n;
      continue;
    }
    size_t escape = ShortEscape(c).size();
    size += escape != 0 ? escape : c < 0x20 ? kUnicodeEscapeBytes : 1;
    ++i;
  }
  return size;
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_.push_back(',');
    has_element_.back() = true;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  out_.push_back('}');
  has_element_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  out_.push_back(']');
  has_element_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(absl::string_view key) {
  BeforeValue();
  AppendJsonString(&out_, key);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(absl::string_view value) {
  BeforeValue();
  AppendJsonString(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_.append("null");  // JSON has no NaN/Inf
  } else {
    absl::StrAppendFormat(&out_, "%.17g", value);
  }
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_.append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::Raw(absl::string_view json) {
  BeforeValue();
  out_.append(json.data(), json.size());
  return *this;
}

}  // namespace hawk::base
