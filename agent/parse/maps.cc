#include "agent/parse/maps.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

using internal::Line;
using internal::LineError;

constexpr absl::string_view kVersionsMarker = ". curr_ver=";

// `N curr_ver=… next_ver=… entry_cnt=…` tail; unknown keys are ignored for later versions.
absl::Status ParseVersions(absl::string_view what, const Line& line, absl::string_view tail,
                           PatternRefInfo* info) {
  for (absl::string_view word : internal::SplitWords(tail)) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(word, absl::MaxSplits('=', 1));
    int64_t* slot = nullptr;
    if (kv.first == "curr_ver") slot = &info->curr_ver;
    if (kv.first == "next_ver") slot = &info->next_ver;
    if (kv.first == "entry_cnt") slot = &info->entry_cnt;
    if (slot == nullptr) continue;
    if (!internal::ParseUnsigned(kv.second, slot)) {
      return LineError(what, line, absl::StrCat(kv.first, ": expected a number"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PatternRefInfo>> ParseList(absl::string_view what,
                                                      absl::string_view reply) {
  absl::StatusOr<std::vector<Line>> lines = internal::SplitReplyLines(what, reply);
  if (!lines.ok()) return lines.status();
  if (lines->empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": empty reply"));
  const Line& header = lines->front();
  if (!absl::StartsWith(header.text, "# id ")) {
    return LineError(what, header, "expected the \"# id (file) description\" header");
  }
  std::vector<PatternRefInfo> list;
  for (size_t i = 1; i < lines->size(); ++i) {
    const Line& line = (*lines)[i];
    absl::string_view text = line.text;
    PatternRefInfo info;
    size_t space = text.find(' ');
    if (space == absl::string_view::npos ||
        !internal::ParseSignedInt(text.substr(0, space), &info.id)) {
      return LineError(what, line, "expected an id");
    }
    text.remove_prefix(space + 1);
    // "(file)": the file ends at the first ") " (or a final ")"). A file name holding ") " would
    // be cut short; HAProxy gives no way to tell.
    if (!absl::ConsumePrefix(&text, "(")) return LineError(what, line, "expected \"(file)\"");
    size_t close = text.find(") ");
    if (close == absl::string_view::npos) {
      if (!absl::EndsWith(text, ")")) return LineError(what, line, "expected \"(file)\"");
      close = text.size() - 1;
    }
    info.file = std::string(text.substr(0, close));
    text.remove_prefix(std::min(text.size(), close + 2));
    size_t marker = text.rfind(kVersionsMarker);
    if (marker != absl::string_view::npos) {
      absl::Status status = ParseVersions(what, line, text.substr(marker + 2), &info);
      if (!status.ok()) return status;
      text = text.substr(0, marker);
    }
    info.description = std::string(text);
    list.push_back(std::move(info));
  }
  return list;
}

// Splits "0x… rest" into the pointer and what follows the first space.
absl::Status SplitEntry(absl::string_view what, const Line& line, absl::string_view missing,
                        absl::string_view* ref, absl::string_view* rest) {
  size_t space = line.text.find(' ');
  *ref = line.text.substr(0, space);
  if (!internal::IsPointer(*ref))
    return LineError(what, line, "expected an entry starting with 0x…");
  if (space == absl::string_view::npos) return LineError(what, line, missing);
  *rest = line.text.substr(space + 1);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PatternRefInfo>> ParseMapList(absl::string_view reply) {
  return ParseList("show map", reply);
}

absl::StatusOr<std::vector<PatternRefInfo>> ParseAclList(absl::string_view reply) {
  return ParseList("show acl", reply);
}

absl::Status ForEachMapEntry(absl::string_view reply, const MapEntryVisitor& on_entry) {
  constexpr absl::string_view kWhat = "show map <map>";
  return internal::ForEachReplyLine(kWhat, reply, [&](const Line& line) -> absl::Status {
    absl::string_view ref;
    absl::string_view rest;
    absl::Status status = SplitEntry(kWhat, line, "expected a key", &ref, &rest);
    if (!status.ok()) return status;
    size_t space = rest.find(' ');
    absl::string_view key = rest.substr(0, space);
    if (key.empty()) return LineError(kWhat, line, "expected a key");
    absl::string_view value =
        space == absl::string_view::npos ? absl::string_view() : rest.substr(space + 1);
    on_entry(ref, key, value);
    return absl::OkStatus();
  });
}

absl::Status ForEachAclEntry(absl::string_view reply, const AclEntryVisitor& on_entry) {
  constexpr absl::string_view kWhat = "show acl <acl>";
  return internal::ForEachReplyLine(kWhat, reply, [&](const Line& line) -> absl::Status {
    absl::string_view ref;
    absl::string_view pattern;
    absl::Status status = SplitEntry(kWhat, line, "expected a pattern", &ref, &pattern);
    if (!status.ok()) return status;
    on_entry(ref, pattern);
    return absl::OkStatus();
  });
}

}  // namespace hawk::parse
