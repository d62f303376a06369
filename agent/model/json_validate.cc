// The whole-document check a Reader runs when a read fails (json_read.h): every value read, as
// the DOM's parse does, so that a document that is not JSON is reported as such (with the DOM's
// error codes and depth limit) before any error about a field.

#include <utility>

#include "agent/model/json_read.h"
#include "agent/model/json_read_internal.h"

namespace hawk::model::json {
namespace {

using simdjson::SUCCESS;
using simdjson::ondemand::document;
using simdjson::ondemand::field;
using simdjson::ondemand::raw_json_string;

// The DOM's name for what On-Demand finds wrong with a document, where they differ: a document
// cut short, or with more after its root value, is "improper structure" to the DOM.
simdjson::error_code DomError(simdjson::error_code error) {
  switch (error) {
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
    case simdjson::TRAILING_CONTENT:
      return simdjson::TAPE_ERROR;
    default:
      return error;
  }
}

}  // namespace

simdjson::error_code Reader::Validate(document& doc) {
  json_type type;
  SIMDJSON_TRY(DomError(doc.type().get(type)));
  if (type == json_type::object) {
    object obj;
    SIMDJSON_TRY(DomError(doc.get_object().get(obj)));
    SIMDJSON_TRY(ValidateObject(obj, 1));
  } else if (type == json_type::array) {
    array items;
    SIMDJSON_TRY(DomError(doc.get_array().get(items)));
    SIMDJSON_TRY(ValidateArray(items, 1));
  } else {
    // A scalar alone, read as the DOM reads it (On-Demand's root scalars have rules of their
    // own): the token up to the next structural character or the end, then nothing else.
    std::string_view token;
    SIMDJSON_TRY(DomError(doc.raw_json_token().get(token)));
    bool alone = token.data() + token.size() == end_;
    auto atom = [&](std::string_view name, simdjson::error_code error) {
      bool valid = token.substr(0, name.size()) == name &&
                   (token.size() == name.size() || internal::IsJsonSpace(token[name.size()]));
      return valid ? SUCCESS : error;
    };
    switch (type) {
      case json_type::string: {
        raw_json_string raw;
        absl::string_view text;
        SIMDJSON_TRY(DomError(doc.get_raw_json_string().get(raw)));
        SIMDJSON_TRY(Unescaped(raw, &text));
        break;
      }
      case json_type::number: {
        simdjson::ondemand::number number;
        SIMDJSON_TRY(DomError(doc.get_number().get(number)));
        break;
      }
      case json_type::boolean:
        SIMDJSON_TRY(token[0] == 't' ? atom("true", simdjson::T_ATOM_ERROR)
                                     : atom("false", simdjson::F_ATOM_ERROR));
        break;
      case json_type::null:
        SIMDJSON_TRY(atom("null", simdjson::N_ATOM_ERROR));
        break;
      default:
        break;
    }
    return alone ? SUCCESS : simdjson::TAPE_ERROR;
  }
  return internal::AtEnd(doc) ? SUCCESS : simdjson::TAPE_ERROR;
}

simdjson::error_code Reader::ValidateObject(object& obj, size_t depth) {
  if (depth > internal::kMaxDepth) return simdjson::DEPTH_ERROR;
  for (auto member : obj) {
    field f;
    SIMDJSON_TRY(DomError(std::move(member).get(f)));
    absl::string_view key;
    SIMDJSON_TRY(Key(f, &key));
    SIMDJSON_TRY(ValidateValue(f.value(), depth));
  }
  return SUCCESS;
}

simdjson::error_code Reader::ValidateArray(array& items, size_t depth) {
  if (depth > internal::kMaxDepth) return simdjson::DEPTH_ERROR;
  for (auto item : items) {
    value v;
    SIMDJSON_TRY(DomError(std::move(item).get(v)));
    SIMDJSON_TRY(ValidateValue(v, depth));
  }
  return SUCCESS;
}

// A member or item of a container at `depth`.
simdjson::error_code Reader::ValidateValue(value& v, size_t depth) {
  json_type type;
  SIMDJSON_TRY(DomError(v.type().get(type)));
  switch (type) {
    case json_type::object: {
      object obj;
      SIMDJSON_TRY(DomError(v.get_object().get(obj)));
      return ValidateObject(obj, depth + 1);
    }
    case json_type::array: {
      array items;
      SIMDJSON_TRY(DomError(v.get_array().get(items)));
      return ValidateArray(items, depth + 1);
    }
    case json_type::string: {
      bool is_string = false;
      absl::string_view text;
      return TryString(v, &is_string, &text);
    }
    case json_type::number: {
      simdjson::ondemand::number number;
      return DomError(v.get_number().get(number));
    }
    case json_type::boolean: {
      bool t = v.raw_json_token()[0] == 't';
      bool b;
      if (v.get_bool().get(b) == SUCCESS) return SUCCESS;
      return t ? simdjson::T_ATOM_ERROR : simdjson::F_ATOM_ERROR;
    }
    case json_type::null: {
      bool is_null = false;
      if (v.is_null().get(is_null) == SUCCESS && is_null) return SUCCESS;
      return simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::TAPE_ERROR;
}

}  // namespace hawk::model::json
