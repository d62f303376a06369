#include "agent/parse/show_proc.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/types/optional.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

using internal::Line;
using internal::LineError;

constexpr absl::string_view kWhat = "show proc";

enum class Section {
  kHead,         // after the header: only the master row belongs here
  kWorkers,      // `# workers`
  kOldWorkers,   // `# old workers`
  kPrograms,     // `# programs`
  kOldPrograms,  // `# old programs`
  kUnknown,      // any other `# …` line: its rows are skipped
};

Section SectionFromComment(absl::string_view comment) {
  absl::string_view name = absl::StripAsciiWhitespace(absl::StripPrefix(comment, "#"));
  if (name == "workers") return Section::kWorkers;
  if (name == "old workers") return Section::kOldWorkers;
  if (name == "programs") return Section::kPrograms;
  if (name == "old programs") return Section::kOldPrograms;
  return Section::kUnknown;
}

absl::Status ParseCommon(const Line& line, absl::string_view pid, absl::string_view reloads,
                         absl::string_view uptime, ProcessEntry* entry) {
  if (!internal::ParseUnsignedInt(pid, &entry->pid) || entry->pid <= 0) {
    return LineError(kWhat, line, "expected a pid");
  }
  if (!internal::ParseUnsignedInt(reloads, &entry->reloads)) {
    return LineError(kWhat, line, "expected a reload count");
  }
  absl::optional<int64_t> seconds = internal::ParseDuration(uptime);
  if (!seconds.has_value()) {
    return LineError(kWhat, line, "expected an uptime like 0d00h01m52s");
  }
  entry->uptime_seconds = *seconds;
  return absl::OkStatus();
}

// `pid master N [failed: M] uptime version [extra…]`.
absl::StatusOr<ProcessEntry> ParseMasterRow(const Line& line,
                                            const std::vector<absl::string_view>& words) {
  ProcessEntry entry;
  entry.type = "master";
  size_t next = 3;
  if (words.size() >= 5 && words[3] == "[failed:") {
    absl::string_view failed = words[4];
    if (!absl::ConsumeSuffix(&failed, "]") ||
        !internal::ParseUnsignedInt(failed, &entry.failed_reloads)) {
      return LineError(kWhat, line, "expected a failed reload count in \"[failed: N]\"");
    }
    next = 5;
  }
  if (words.size() < next + 2) {
    return LineError(kWhat, line,
                     "master row is truncated: expected pid, type, reloads, uptime "
                     "and version");
  }
  absl::Status status = ParseCommon(line, words[0], words[2], words[next], &entry);
  if (!status.ok()) return status;
  entry.version = std::string(words[next + 1]);
  return entry;
}

// `pid worker reloads uptime version [extra…]` and `pid <name> reloads uptime - [extra…]`.
absl::StatusOr<ProcessEntry> ParseChildRow(const Line& line,
                                           const std::vector<absl::string_view>& words,
                                           Section section) {
  if (words.size() < 5) {
    return LineError(kWhat, line,
                     "row is truncated: expected pid, type, reloads, uptime and "
                     "version");
  }
  ProcessEntry entry;
  entry.type = std::string(words[1]);
  bool worker_section = section == Section::kWorkers || section == Section::kOldWorkers;
  if (worker_section && entry.type != "worker") {
    return LineError(kWhat, line, "expected type \"worker\" in a workers section");
  }
  if (!worker_section && (entry.type == "worker" || entry.type == "master")) {
    return LineError(kWhat, line, "unexpected worker or master row in a programs section");
  }
  entry.listed_as_old = section == Section::kOldWorkers || section == Section::kOldPrograms;
  absl::Status status = ParseCommon(line, words[0], words[2], words[3], &entry);
  if (!status.ok()) return status;
  if (words[4] != "-") entry.version = std::string(words[4]);
  return entry;
}

}  // namespace

absl::StatusOr<ShowProc> ParseShowProc(absl::string_view reply) {
  absl::StatusOr<std::vector<Line>> lines = internal::SplitReplyLines(kWhat, reply);
  if (!lines.ok()) return lines.status();
  if (lines->empty()) return absl::InvalidArgumentError("show proc: empty reply");
  const Line& header = lines->front();
  std::vector<absl::string_view> header_words = internal::SplitWords(header.text);
  if (header_words.empty() || header_words[0] != "#<PID>") {
    return LineError(kWhat, header, "expected the \"#<PID> <type> …\" header");
  }

  ShowProc proc;
  bool have_master = false;
  absl::flat_hash_set<int> pids;
  Section section = Section::kHead;
  for (size_t i = 1; i < lines->size(); ++i) {
    const Line& line = (*lines)[i];
    absl::string_view text = absl::StripLeadingAsciiWhitespace(line.text);
    if (absl::StartsWith(text, "#")) {
      Section next = SectionFromComment(text);
      if (!have_master && next != Section::kUnknown) {
        return LineError(kWhat, line, "section before the master row");
      }
      section = next;
      continue;
    }
    if (section == Section::kUnknown) continue;
    std::vector<absl::string_view> words = internal::SplitWords(text);
    if (words.size() < 2) {
      return LineError(kWhat, line, "expected a process row");
    }
    absl::StatusOr<ProcessEntry> entry;
    if (section == Section::kHead) {
      if (have_master) return LineError(kWhat, line, "a second row before \"# workers\"");
      if (words[1] != "master") return LineError(kWhat, line, "expected the master row");
      entry = ParseMasterRow(line, words);
    } else {
      entry = ParseChildRow(line, words, section);
    }
    if (!entry.ok()) return entry.status();
    if (!pids.insert(entry->pid).second) {
      return LineError(kWhat, line, absl::StrCat("pid ", entry->pid, " is listed twice"));
    }
    switch (section) {
      case Section::kHead:
        proc.master = *std::move(entry);
        have_master = true;
        break;
      case Section::kWorkers:
      case Section::kOldWorkers:
        proc.workers.push_back(*std::move(entry));
        break;
      case Section::kPrograms:
      case Section::kOldPrograms:
        proc.programs.push_back(*std::move(entry));
        break;
      case Section::kUnknown:
        break;
    }
  }
  if (!have_master) return absl::InvalidArgumentError("show proc: no master row");
  return proc;
}

}  // namespace hawk::parse
