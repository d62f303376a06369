#include "agent/model/desired_json.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/base/json_writer.h"
#include "agent/base/status_field.h"
#include "agent/base/status_macros.h"
#include "simdjson.h"

namespace hawk::model {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Names seen so far in one list, with the index that first used them (for "also entries[1]").
// The views point into the parser's string buffer, which outlives the parse.
using SeenNames = absl::flat_hash_map<absl::string_view, size_t>;

absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- Paths and messages ----

bool IsPlainKey(absl::string_view key) {
  if (key.empty() || absl::ascii_isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// `parent.key`, or `parent["odd key"]` when the key is not a plain identifier (the path is echoed
// to clients and logs, so a hostile key stays quoted and escaped).
std::string Member(absl::string_view parent, absl::string_view key) {
  if (IsPlainKey(key)) return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
  std::string out(parent);
  out.push_back('[');
  base::AppendJsonString(&out, key);
  out.push_back(']');
  return out;
}

std::string Index(absl::string_view parent, size_t i) { return absl::StrCat(parent, "[", i, "]"); }

// A client value quoted for a message: JSON-escaped, cut after 64 bytes.
std::string Quote(absl::string_view value) {
  constexpr size_t kMaxShown = 64;
  std::string out;
  if (value.size() <= kMaxShown) {
    base::AppendJsonString(&out, value);
    return out;
  }
  size_t cut = kMaxShown;
  // Do not split a UTF-8 sequence (continuation bytes are 10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  base::AppendJsonString(&out, value.substr(0, cut));
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

// ---- JSON shapes ----

absl::Status AsObject(element e, absl::string_view path, object* out) {
  if (e.get_object().get(*out) != simdjson::SUCCESS) {
    return base::FieldError(path, absl::StrCat("must be an object, got ", TypeName(e.type())));
  }
  return absl::OkStatus();
}

// An array of at most `max` `what`s (null members never get here: ForEachMember skips them).
absl::Status AsArray(element e, absl::string_view path, size_t max, absl::string_view what,
                     array* out) {
  if (e.get_array().get(*out) != simdjson::SUCCESS) {
    return base::FieldError(path, absl::StrCat("must be an array, got ", TypeName(e.type())));
  }
  if (size_t size = out->size(); size > max) {
    // size() saturates at 0xFFFFFF, far above every limit.
    return base::FieldError(path, absl::StrCat("must hold at most ", max, " ", what, ", got ", size,
                                               size == 0xFFFFFF ? " or more" : ""));
  }
  return absl::OkStatus();
}

absl::Status AsString(element e, absl::string_view path, absl::string_view* out) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) {
    return base::FieldError(path, absl::StrCat("must be a string, got ", TypeName(e.type())));
  }
  *out = View(s);
  return absl::OkStatus();
}

// Rejects a key that already appeared in this object. Objects here have at most five known
// fields, and an unknown one fails before it gets here, so a linear scan suffices.
absl::Status CheckNewKey(std::vector<std::string_view>* seen, std::string_view key,
                         absl::string_view path) {
  if (std::find(seen->begin(), seen->end(), key) != seen->end()) {
    return base::FieldError(path, "duplicate key in the same object");
  }
  seen->push_back(key);
  return absl::OkStatus();
}

// Iterates over the members of `obj`: `known` lists the accepted field names; a duplicate or an
// unknown name is an error; null members are skipped (proto3: null is the default).
// `handle(key, value, path)` returns a Status. Callers name the handler before the call: written
// inside RETURN_IF_ERROR(...), its own RETURN_IF_ERRORs would shadow the macro's variable.
template <typename Handler>
absl::Status ForEachMember(object obj, absl::string_view path,
                           std::initializer_list<std::string_view> known, Handler&& handle) {
  std::vector<std::string_view> seen;
  for (simdjson::dom::key_value_pair member : obj) {
    std::string field = Member(path, View(member.key));
    if (std::find(known.begin(), known.end(), member.key) == known.end()) {
      return base::FieldError(field, "unknown field");
    }
    RETURN_IF_ERROR(CheckNewKey(&seen, member.key, field));
    if (member.value.is_null()) continue;
    RETURN_IF_ERROR(handle(member.key, member.value, field));
  }
  return absl::OkStatus();
}

// A decimal integer in a string (proto3 accepts "42" for integer fields): an optional '-', then
// digits without a leading zero.
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

// An integer field in [min, max]: a JSON integer (no fraction or exponent) or a decimal string.
absl::Status AsInteger(element e, absl::string_view path, int64_t min, int64_t max, int64_t* out) {
  std::string expected = absl::StrCat("must be an integer in ", min, "..", max);
  int64_t value = 0;
  std::string shown;
  switch (e.type()) {
    case element_type::INT64:
      value = e.get_int64().value_unsafe();
      shown = absl::StrCat(value);
      break;
    case element_type::UINT64:  // above INT64_MAX: out of every range here
      return base::FieldError(path,
                              absl::StrCat(expected, ", got ", e.get_uint64().value_unsafe()));
    case element_type::DOUBLE: {
      // Stricter than proto3, which takes 80.0 and 8e1: a port written that way is a client bug.
      double d = e.get_double().value_unsafe();
      bool integral = std::isfinite(d) && std::trunc(d) == d;
      return base::FieldError(path,
                              absl::StrCat(expected, ", got ", d,
                                           integral ? " written with a fraction or exponent" : ""));
    }
    case element_type::STRING: {
      absl::string_view text = View(e.get_string().value_unsafe());
      if (!ParseDecimalString(text, &value)) {
        return base::FieldError(path, absl::StrCat(expected, ", got ", Quote(text)));
      }
      shown = Quote(text);
      break;
    }
    default:
      return base::FieldError(path, absl::StrCat(expected, ", got ", TypeName(e.type())));
  }
  if (value < min || value > max) {
    return base::FieldError(path, absl::StrCat(expected, ", got ", shown));
  }
  *out = value;
  return absl::OkStatus();
}

// ---- Value rules ----

// The first byte of `s` that `allowed` rejects, or npos.
template <typename Pred>
size_t FindDisallowed(absl::string_view s, Pred allowed) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (!allowed(static_cast<unsigned char>(s[i]))) return i;
  }
  return absl::string_view::npos;
}

std::string BadByte(absl::string_view s, size_t i) {
  return absl::StrCat("byte ", DescribeByte(static_cast<unsigned char>(s[i])), " at offset ", i);
}

absl::Status CheckLength(absl::string_view s, absl::string_view path, size_t max) {
  if (s.empty()) return base::FieldError(path, "must not be empty");
  if (s.size() > max) {
    return base::FieldError(path, absl::StrCat("must be at most ", max, " bytes, got ", s.size()));
  }
  return absl::OkStatus();
}

bool IsIdentifierByte(unsigned char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == ':' || c == '-';
}

// Backend and server names: HAProxy identifiers, which also keeps them one CLI word that cannot
// start a prefix (`@`) or a reference (`#`).
absl::Status CheckIdentifier(absl::string_view s, absl::string_view path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxIdentifierBytes));
  size_t bad = FindDisallowed(s, IsIdentifierByte);
  if (bad != absl::string_view::npos) {
    return base::FieldError(path, absl::StrCat("must contain only [A-Za-z0-9_.:-], got ", Quote(s),
                                               " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

bool IsPrintableNoSpace(unsigned char c) { return c > 0x20 && c < 0x7F; }

absl::Status CheckVersion(absl::string_view s, absl::string_view path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxVersionBytes));
  size_t bad = FindDisallowed(s, IsPrintableNoSpace);
  if (bad != absl::string_view::npos) {
    return base::FieldError(path, absl::StrCat("must be printable ASCII without spaces, got ",
                                               Quote(s), " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

bool IsFilePathByte(unsigned char c) {
  return IsPrintableNoSpace(c) && c != ';' && c != '\\' && c != '#' && c != '"' && c != '\'';
}

// Map and ACL names go unescaped into CLI lines, so only bytes with no meaning to the tokenizer.
absl::Status CheckFilePath(absl::string_view s, absl::string_view path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxFilePathBytes));
  if (s[0] != '/') {
    return base::FieldError(
        path, absl::StrCat("must be an absolute file path starting with '/', got ", Quote(s)));
  }
  size_t bad = FindDisallowed(s, IsFilePathByte);
  if (bad != absl::string_view::npos) {
    return base::FieldError(
        path, absl::StrCat("must be a file path of printable ASCII without spaces, ';', '\\', '#' "
                           "or quotes, got ",
                           Quote(s), " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

// Map keys and values, ACL patterns: anything the command builder can escape.
absl::Status CheckEntryText(absl::string_view s, absl::string_view path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxEntryBytes));
  size_t bad = FindDisallowed(s, [](unsigned char c) { return c != '\n' && c != '\r' && c != 0; });
  if (bad != absl::string_view::npos) {
    return base::FieldError(
        path, absl::StrCat("must not contain LF, CR or NUL, which cannot be escaped on a CLI "
                           "line, got ",
                           Quote(s), " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

// Why `s` is not an RFC 1123 hostname, or "" if it is one.
std::string HostnameProblem(absl::string_view s) {
  size_t bad = FindDisallowed(
      s, [](unsigned char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.'; });
  if (bad != absl::string_view::npos) {
    return absl::StrCat(BadByte(s, bad), " is not allowed in a hostname");
  }
  if (s.size() > kMaxHostnameBytes) {
    return absl::StrCat("a hostname has at most ", kMaxHostnameBytes, " bytes");
  }
  size_t start = 0;
  while (true) {
    size_t end = s.find('.', start);
    if (end == absl::string_view::npos) end = s.size();
    absl::string_view label = s.substr(start, end - start);
    if (label.empty()) return "a hostname has no empty labels";
    if (label.size() > 63) return "a hostname label has at most 63 bytes";
    if (label.front() == '-' || label.back() == '-') {
      return "a hostname label neither starts nor ends with '-'";
    }
    if (end == s.size()) break;
    start = end + 1;
  }
  if (std::none_of(s.begin(), s.end(),
                   [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); })) {
    return "not a valid IPv4 literal, and a hostname needs a letter";
  }
  return "";
}

absl::Status CheckAddress(absl::string_view s, absl::string_view path) {
  if (s.empty()) return base::FieldError(path, "must not be empty");
  if (IsIpLiteral(s)) return absl::OkStatus();
  std::string problem;
  if (s.find(':') != absl::string_view::npos) {
    problem = "not a valid IPv6 literal (write it without brackets, zone id or port)";
  } else {
    problem = HostnameProblem(s);
    if (problem.empty()) return absl::OkStatus();
  }
  return base::FieldError(path, absl::StrCat("must be an IPv4 or IPv6 literal or a hostname, got ",
                                             Quote(s), ": ", problem));
}

// Records `name` (found at `index` of the list `list_name`) and rejects a second occurrence.
absl::Status CheckUnique(SeenNames* seen, absl::string_view name, size_t index,
                         absl::string_view path, absl::string_view what,
                         absl::string_view list_name) {
  auto [it, inserted] = seen->emplace(name, index);
  if (!inserted) {
    return base::FieldError(path, absl::StrCat("duplicate ", what, " ", Quote(name), " (also ",
                                               list_name, "[", it->second, "])"));
  }
  return absl::OkStatus();
}

// ---- Objects ----

// Parses the array `value` at `field` into `out`, one `parse(element, path, index, names, item)`
// per element.
template <typename T, typename ParseFn>
absl::Status ParseList(element value, const std::string& field, size_t max, absl::string_view what,
                       ParseFn parse, std::vector<T>* out) {
  array items;
  RETURN_IF_ERROR(AsArray(value, field, max, what, &items));
  SeenNames names;
  names.reserve(items.size());
  out->reserve(items.size());
  size_t i = 0;
  for (element item : items) {
    RETURN_IF_ERROR(parse(item, Index(field, i), i, &names, &out->emplace_back()));
    ++i;
  }
  return absl::OkStatus();
}

absl::Status ParseServer(element e, const std::string& path, size_t index, SeenNames* names,
                         DesiredServer* out) {
  object obj;
  RETURN_IF_ERROR(AsObject(e, path, &obj));
  bool has_name = false;
  bool has_address = false;
  auto handle = [&](std::string_view key, element value, const std::string& field) -> absl::Status {
    if (key == "name" || key == "address") {
      absl::string_view text;
      RETURN_IF_ERROR(AsString(value, field, &text));
      if (key == "name") {
        RETURN_IF_ERROR(CheckIdentifier(text, field));
        RETURN_IF_ERROR(CheckUnique(names, text, index, field, "server name", "servers"));
        out->name = std::string(text);
        has_name = true;
      } else {
        RETURN_IF_ERROR(CheckAddress(text, field));
        out->address = std::string(text);
        has_address = true;
      }
    } else if (key == "port" || key == "weight") {
      int64_t number = 0;
      RETURN_IF_ERROR(key == "port" ? AsInteger(value, field, 1, 65535, &number)
                                    : AsInteger(value, field, 0, 256, &number));
      (key == "port" ? out->port : out->weight) = static_cast<int>(number);
    } else {  // state
      std::string_view name;
      absl::optional<ServerState> state;
      if (value.get_string().get(name) == simdjson::SUCCESS) {
        state = ServerStateFromName(View(name));
      }
      if (!state) {
        return base::FieldError(
            field, absl::StrCat("must be one of \"READY\", \"DRAIN\", \"MAINT\", got ",
                                value.is_string() ? Quote(View(name)) : TypeName(value.type())));
      }
      out->state = state;
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ForEachMember(obj, path, {"name", "address", "port", "weight", "state"}, handle));
  if (!has_name) return base::FieldError(Member(path, "name"), "required");
  if (!has_address) return base::FieldError(Member(path, "address"), "required");
  return absl::OkStatus();
}

absl::Status ParseBackend(element e, const std::string& path, size_t index, SeenNames* names,
                          DesiredBackend* out) {
  object obj;
  RETURN_IF_ERROR(AsObject(e, path, &obj));
  bool has_name = false;
  auto handle = [&](std::string_view key, element value, const std::string& field) -> absl::Status {
    if (key == "name") {
      absl::string_view text;
      RETURN_IF_ERROR(AsString(value, field, &text));
      RETURN_IF_ERROR(CheckIdentifier(text, field));
      RETURN_IF_ERROR(CheckUnique(names, text, index, field, "backend name", "backends"));
      out->name = std::string(text);
      has_name = true;
      return absl::OkStatus();
    }
    return ParseList(value, field, kMaxServersPerBackend, "servers", ParseServer, &out->servers);
  };
  RETURN_IF_ERROR(ForEachMember(obj, path, {"name", "servers"}, handle));
  if (!has_name) return base::FieldError(Member(path, "name"), "required");
  return absl::OkStatus();
}

absl::Status ParseMapEntry(element e, const std::string& path, size_t index, SeenNames* keys,
                           MapEntry* out) {
  object obj;
  RETURN_IF_ERROR(AsObject(e, path, &obj));
  bool has_key = false;
  bool has_value = false;
  auto handle = [&](std::string_view key, element value, const std::string& field) -> absl::Status {
    absl::string_view text;
    RETURN_IF_ERROR(AsString(value, field, &text));
    RETURN_IF_ERROR(CheckEntryText(text, field));
    if (key == "key") {
      RETURN_IF_ERROR(CheckUnique(keys, text, index, field, "key", "entries"));
      out->key = std::string(text);
      has_key = true;
    } else {
      out->value = std::string(text);
      has_value = true;
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ForEachMember(obj, path, {"key", "value"}, handle));
  if (!has_key) return base::FieldError(Member(path, "key"), "required");
  if (!has_value) {
    return base::FieldError(Member(path, "value"), "required (HAProxy maps need a value)");
  }
  return absl::OkStatus();
}

absl::Status ParseMap(element e, const std::string& path, size_t index, SeenNames* names,
                      DesiredMap* out) {
  object obj;
  RETURN_IF_ERROR(AsObject(e, path, &obj));
  bool has_name = false;
  auto handle = [&](std::string_view key, element value, const std::string& field) -> absl::Status {
    if (key == "name") {
      absl::string_view text;
      RETURN_IF_ERROR(AsString(value, field, &text));
      RETURN_IF_ERROR(CheckFilePath(text, field));
      RETURN_IF_ERROR(CheckUnique(names, text, index, field, "map name", "maps"));
      out->name = std::string(text);
      has_name = true;
      return absl::OkStatus();
    }
    return ParseList(value, field, kMaxMapEntries, "entries", ParseMapEntry, &out->entries);
  };
  RETURN_IF_ERROR(ForEachMember(obj, path, {"name", "entries"}, handle));
  if (!has_name) return base::FieldError(Member(path, "name"), "required");
  return absl::OkStatus();
}

absl::Status ParseAcl(element e, const std::string& path, size_t index, SeenNames* names,
                      DesiredAcl* out) {
  object obj;
  RETURN_IF_ERROR(AsObject(e, path, &obj));
  bool has_name = false;
  auto handle = [&](std::string_view key, element value, const std::string& field) -> absl::Status {
    if (key == "name") {
      absl::string_view text;
      RETURN_IF_ERROR(AsString(value, field, &text));
      RETURN_IF_ERROR(CheckFilePath(text, field));
      RETURN_IF_ERROR(CheckUnique(names, text, index, field, "ACL name", "acls"));
      out->name = std::string(text);
      has_name = true;
      return absl::OkStatus();
    }
    array patterns;
    RETURN_IF_ERROR(AsArray(value, field, kMaxAclPatterns, "patterns", &patterns));
    SeenNames seen;
    seen.reserve(patterns.size());
    out->patterns.reserve(patterns.size());
    size_t i = 0;
    for (element pattern : patterns) {
      std::string item = Index(field, i);
      absl::string_view text;
      RETURN_IF_ERROR(AsString(pattern, item, &text));
      RETURN_IF_ERROR(CheckEntryText(text, item));
      RETURN_IF_ERROR(CheckUnique(&seen, text, i, item, "pattern", "patterns"));
      out->patterns.emplace_back(text);
      ++i;
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ForEachMember(obj, path, {"name", "patterns"}, handle));
  if (!has_name) return base::FieldError(Member(path, "name"), "required");
  return absl::OkStatus();
}

void Normalise(DesiredState* state) {
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  std::sort(state->backends.begin(), state->backends.end(), by_name);
  for (DesiredBackend& backend : state->backends) {
    std::sort(backend.servers.begin(), backend.servers.end(), by_name);
  }
  std::sort(state->maps.begin(), state->maps.end(), by_name);
  for (DesiredMap& map : state->maps) std::sort(map.entries.begin(), map.entries.end());
  std::sort(state->acls.begin(), state->acls.end(), by_name);
  for (DesiredAcl& acl : state->acls) std::sort(acl.patterns.begin(), acl.patterns.end());
}

}  // namespace

bool IsIpLiteral(absl::string_view address) {
  // inet_pton reads a C string: an embedded NUL would hide the bytes after it.
  char buffer[INET6_ADDRSTRLEN];
  if (address.empty() || address.size() >= sizeof(buffer) ||
      address.find('\0') != absl::string_view::npos) {
    return false;
  }
  std::copy(address.begin(), address.end(), buffer);
  buffer[address.size()] = '\0';
  unsigned char binary[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, buffer, binary) == 1 || inet_pton(AF_INET6, buffer, binary) == 1;
}

absl::StatusOr<DesiredState> ParseDesiredState(absl::string_view json) {
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::parser parser;
  element doc;
  if (simdjson::error_code error = parser.parse(padded).get(doc); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("desired state is not valid JSON: ", simdjson::error_message(error)));
  }
  object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("desired state must be a JSON object, got ", TypeName(doc.type())));
  }
  DesiredState state;
  auto handle = [&](std::string_view key, element value, const std::string& field) -> absl::Status {
    if (key == "version") {
      absl::string_view text;
      RETURN_IF_ERROR(AsString(value, field, &text));
      if (text.empty()) return absl::OkStatus();  // the proto3 default
      RETURN_IF_ERROR(CheckVersion(text, field));
      state.version = std::string(text);
    } else if (key == "generation") {
      int64_t generation = 0;
      RETURN_IF_ERROR(AsInteger(value, field, 0, std::numeric_limits<int64_t>::max(), &generation));
      state.generation = generation;
    } else if (key == "backends") {
      RETURN_IF_ERROR(
          ParseList(value, field, kMaxBackends, "backends", ParseBackend, &state.backends));
    } else if (key == "maps") {
      RETURN_IF_ERROR(ParseList(value, field, kMaxMaps, "maps", ParseMap, &state.maps));
    } else {
      RETURN_IF_ERROR(ParseList(value, field, kMaxAcls, "acls", ParseAcl, &state.acls));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(
      ForEachMember(root, "", {"version", "generation", "backends", "maps", "acls"}, handle));
  Normalise(&state);
  return state;
}

std::string DesiredStateToJson(const DesiredState& state) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("version").String(state.version);
  // proto3 maps int64 to a decimal string (JavaScript numbers lose precision above 2^53).
  if (state.generation) w.Key("generation").String(absl::StrCat(*state.generation));
  w.Key("backends").BeginArray();
  for (const DesiredBackend& backend : state.backends) {
    w.BeginObject();
    w.Key("name").String(backend.name);
    w.Key("servers").BeginArray();
    for (const DesiredServer& server : backend.servers) {
      w.BeginObject();
      w.Key("name").String(server.name);
      w.Key("address").String(server.address);
      if (server.port) w.Key("port").Int(*server.port);
      if (server.weight) w.Key("weight").Int(*server.weight);
      if (server.state) w.Key("state").String(ServerStateName(*server.state));
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("maps").BeginArray();
  for (const DesiredMap& map : state.maps) {
    w.BeginObject();
    w.Key("name").String(map.name);
    w.Key("entries").BeginArray();
    for (const MapEntry& entry : map.entries) {
      w.BeginObject();
      w.Key("key").String(entry.key);
      w.Key("value").String(entry.value);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("acls").BeginArray();
  for (const DesiredAcl& acl : state.acls) {
    w.BeginObject();
    w.Key("name").String(acl.name);
    w.Key("patterns").BeginArray();
    for (const std::string& pattern : acl.patterns) w.String(pattern);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace hawk::model
