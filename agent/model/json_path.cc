#include "agent/model/json_path.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/base/json_writer.h"
#include "agent/base/status_field.h"

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

}  // namespace hawk::model::json
