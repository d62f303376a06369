#include "agent/model/reload_json.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"
#include "simdjson.h"

namespace hawk::model {

absl::StatusOr<absl::optional<std::string>> ParseReloadRequest(absl::string_view body) {
  if (absl::StripAsciiWhitespace(body).empty()) return absl::optional<std::string>();
  simdjson::padded_string padded(body.data(), body.size());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (simdjson::error_code error = parser.parse(padded).get(doc); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not valid JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the body must be a JSON object like {\"config\":\"…\"}");
  }
  absl::optional<std::string> config;
  bool seen = false;
  for (simdjson::dom::key_value_pair member : object) {
    if (member.key != "config") {
      return base::WithField(absl::InvalidArgumentError(absl::StrCat(
                                 "unknown field \"", std::string(member.key.substr(0, 64)),
                                 "\"; the only field is \"config\"")),
                             std::string(member.key.substr(0, 64)));
    }
    if (seen) return base::FieldError("config", "duplicate key in the same object");
    seen = true;
    if (member.value.is_null()) continue;
    std::string_view text;
    if (member.value.get_string().get(text) != simdjson::SUCCESS) {
      return base::FieldError("config", "must be a string holding the whole configuration");
    }
    if (text.empty()) {
      return base::FieldError("config", "must not be empty; omit it to reload the current file");
    }
    if (text.size() > kMaxConfigBytes) {
      return base::FieldError(
          "config", absl::StrCat("must be at most ", kMaxConfigBytes, " bytes, got ", text.size()));
    }
    if (text.find('\0') != std::string_view::npos) {
      return base::FieldError("config", "must not contain a NUL byte");
    }
    config = std::string(text);
  }
  return config;
}

}  // namespace hawk::model
