#include "agent/status/status_text.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/status/answer_fields.h"
#include "simdjson.h"

namespace hawk::status {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;

std::string Duration(int64_t seconds) {
  if (seconds < 60) return absl::StrCat(seconds, "s");
  if (seconds < 3600) return absl::StrCat(seconds / 60, "m", seconds % 60, "s");
  if (seconds < 86400) return absl::StrCat(seconds / 3600, "h", seconds % 3600 / 60, "m");
  return absl::StrCat(seconds / 86400, "d", seconds % 86400 / 3600, "h");
}

// A table whose columns are as wide as their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  // `colors[i]`: an ANSI code for cell i ("" for none); widths ignore it.
  void Add(std::vector<std::string> row, std::vector<std::string> colors = {}) {
    rows_.push_back(std::move(row));
    colors_.resize(rows_.size());
    colors_.back() = std::move(colors);
  }
  std::string Render(bool color) const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& row : rows_) {
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (size_t r = 0; r < rows_.size(); ++r) {
      std::string line;
      for (size_t i = 0; i < rows_[r].size(); ++i) {
        const std::string& cell = rows_[r][i];
        std::string code = r < colors_.size() && i < colors_[r].size() ? colors_[r][i] : "";
        bool last = i + 1 == rows_[r].size();
        std::string padded = last ? cell : cell + std::string(width[i] - cell.size() + 2, ' ');
        if (color && r == 0) {
          absl::StrAppend(&line, "\x1b[1m", padded, "\x1b[0m");
        } else if (color && !code.empty()) {
          absl::StrAppend(&line, code, cell, "\x1b[0m", padded.substr(cell.size()));
        } else {
          line += padded;
        }
      }
      absl::StrAppend(&out, line, "\n");
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::vector<std::string>> colors_;
};

constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kYellow = "\x1b[33m";
constexpr const char* kRed = "\x1b[31m";

}  // namespace

absl::StatusOr<std::string> RenderReport(absl::string_view report_json,
                                         const RenderOptions& options) {
  simdjson::dom::parser parser;
  element root;
  if (parser.parse(report_json.data(), report_json.size()).get(root) != simdjson::SUCCESS ||
      !root.is_object()) {
    return absl::InvalidArgumentError("the answer is not a JSON object");
  }
  element master;
  array workers;
  if (root["master"].get(master) != simdjson::SUCCESS ||
      root["workers"].get(workers) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the answer is not a workers report (no master, workers)");
  }
  std::string out;
  bool reachable = Bool(root, "masterReachable");
  absl::StrAppend(&out, "master ", Int(master, "pid"), "  HAProxy ", Str(master, "version"),
                  "  up ", Duration(Int(master, "uptimeSeconds")), "  reloads ",
                  Int(master, "reloads"));
  if (int64_t failed = Int(master, "failedReloads"); failed > 0) {
    absl::StrAppend(&out, " (", failed, " failed since the last success)");
  }
  absl::StrAppend(&out, "  master CLI ");
  if (reachable) {
    out += options.color ? absl::StrCat(kGreen, "reachable\x1b[0m") : "reachable";
  } else {
    out += options.color ? absl::StrCat(kRed, "UNREACHABLE\x1b[0m") : "UNREACHABLE";
    if (std::string error = Str(root, "masterError"); !error.empty()) {
      absl::StrAppend(&out, ": ", error);
    }
  }
  out += "\n\n";

  Table table({"PID", "ROLE", "UP", "CONNS", "APPLIED", "IN SYNC", "FROZEN SINCE", "STALE",
               "SESSIONS ON STALE"});
  std::string details;
  for (element worker : workers) {
    int64_t pid = Int(worker, "pid");
    std::string role = Str(worker, "role");
    bool in_sync = Bool(worker, "inSync");
    bool frozen = Bool(worker, "frozen");
    array stale, refused;
    size_t stale_count = worker["stale"].get(stale) == simdjson::SUCCESS ? stale.size() : 0;
    size_t refused_count = worker["refused"].get(refused) == simdjson::SUCCESS ? refused.size() : 0;
    std::string applied = Str(worker, "appliedVersion");
    // Nothing applied and nothing wrong: no desired state yet (or not reached yet).
    std::string sync_text = in_sync                                                     ? "yes"
                            : applied.empty() && stale_count == 0 && refused_count == 0 ? "-"
                                                                                        : "no";
    table.Add({absl::StrCat(pid), role, Duration(Int(worker, "uptimeSeconds")),
               absl::StrCat(Int(worker, "connections")), applied.empty() ? "-" : applied, sync_text,
               frozen ? Str(worker, "frozenSince") : "-", absl::StrCat(stale_count),
               absl::StrCat(Int(worker, "sessionsOnStaleServers"))},
              {"",
               role == "CURRENT"   ? kGreen
               : role == "LEAVING" ? kYellow
                                   : "",
               "", "", "",
               in_sync             ? kGreen
               : sync_text == "no" ? kRed
                                   : "",
               frozen ? kYellow : "", stale_count ? kRed : "",
               Int(worker, "sessionsOnStaleServers") > 0 ? kRed : ""});
    std::string error = Str(worker, "error");
    std::string sync_error = Str(worker, "syncError");
    if (stale_count == 0 && refused_count == 0 && error.empty() && sync_error.empty()) continue;
    absl::StrAppend(&details, "\nworker ", pid, " (", role, ")\n");
    if (!error.empty()) absl::StrAppend(&details, "  not reachable: ", error, "\n");
    if (!sync_error.empty()) absl::StrAppend(&details, "  last reconcile: ", sync_error, "\n");
    if (stale_count > 0) {
      for (element item : stale) {
        absl::StrAppend(&details, "  stale   ", Str(item, "object"), " ", Str(item, "field"),
                        ": holds ", Str(item, "actual"), ", desired ", Str(item, "desired"), " (",
                        Str(item, "reason"), ")\n");
      }
    }
    if (refused_count > 0) {
      for (element item : refused) {
        absl::StrAppend(&details, "  refused `", Str(item, "command"), "`: ", Str(item, "reply"),
                        "\n");
      }
    }
  }
  out += workers.size() == 0 ? std::string("no workers listed\n") : table.Render(options.color);
  out += details;
  array warnings;
  if (root["warnings"].get(warnings) == simdjson::SUCCESS && warnings.size() > 0) {
    out += "\nconfiguration advice:\n";
    for (element warning : warnings) {
      std::string_view text;
      if (warning.get(text) == simdjson::SUCCESS)
        absl::StrAppend(&out, "  ", absl::string_view(text.data(), text.size()), "\n");
    }
  }
  return out;
}

}  // namespace hawk::status
