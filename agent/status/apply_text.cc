#include "agent/status/apply_text.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "agent/status/answer_fields.h"
#include "simdjson.h"

namespace hawk::status {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;

std::string Colored(const std::string& text, const char* code, bool color) {
  return color ? absl::StrCat(code, text, "\x1b[0m") : text;
}

void AppendStaleAndRefused(element worker, std::string* out) {
  array stale;
  if (worker["stale"].get(stale) == simdjson::SUCCESS) {
    for (element s : stale) {
      std::string field = Str(s, "field");
      absl::StrAppend(out, "  stale   ", Str(s, "object"), field.empty() ? "" : " ", field,
                      ": wants ", Str(s, "desired"), ", has ", Str(s, "actual"));
      if (std::string reason = Str(s, "reason"); !reason.empty()) {
        absl::StrAppend(out, " (", reason, ")");
      }
      absl::StrAppend(out, "\n");
    }
  }
  array refused;
  if (worker["refused"].get(refused) == simdjson::SUCCESS) {
    for (element r : refused) {
      absl::StrAppend(out, "  refused ", Str(r, "object"), ": `", Str(r, "command"),
                      "`: HAProxy replied \"", Str(r, "reply"), "\"\n");
    }
  }
}

size_t Count(element worker, const char* key) {
  array items;
  return worker[key].get(items) == simdjson::SUCCESS ? items.size() : 0;
}

// A dry run's answer: per worker, what the push would send and what would stay stale.
ApplyView RenderDryRun(element root, array workers) {
  ApplyView view;
  std::string& out = view.text;
  absl::StrAppend(&out, "dry run: version ", Str(root, "version"));
  if (std::string generation = Str(root, "generation"); !generation.empty()) {
    absl::StrAppend(&out, "  generation ", generation);
  }
  bool changes = false;
  if (root["changes"].get(changes) != simdjson::SUCCESS) changes = false;
  absl::StrAppend(&out, changes ? "\n" : "  (changes nothing)\n");
  bool clean = true;
  for (element worker : workers) {
    int64_t pid = 0;
    if (worker["pid"].get(pid) != simdjson::SUCCESS) pid = 0;
    std::string basis = Str(worker, "basis");
    absl::StrAppend(&out, "worker ", pid, " ", Str(worker, "role"), "  ", basis);
    if (basis == "OBSERVE") {
      absl::StrAppend(&out, "  (observed first: the commands depend on what it holds)");
    } else {
      absl::StrAppend(&out, "  would send ", Count(worker, "commands"), " command(s)");
    }
    absl::StrAppend(&out, "\n");
    array commands;
    if (worker["commands"].get(commands) == simdjson::SUCCESS) {
      for (element c : commands) {
        std::string_view text;
        if (c.get(text) != simdjson::SUCCESS) continue;
        std::string_view line = text.substr(0, text.find('\n'));
        absl::StrAppend(&out, "  send    ", absl::string_view(line.data(), line.size()), "\n");
      }
    }
    array replaces;
    if (worker["replaces"].get(replaces) == simdjson::SUCCESS) {
      for (element r : replaces) {
        absl::StrAppend(&out, "  replace ", Str(r, "object"), ": ", Str(r, "entries"),
                        " entries in one transaction\n");
      }
    }
    clean = clean && Count(worker, "stale") == 0 && Count(worker, "refused") == 0;
    AppendStaleAndRefused(worker, &out);
  }
  view.all_applied = clean;
  return view;
}

}  // namespace

absl::StatusOr<ApplyView> RenderPushAnswer(absl::string_view answer_json,
                                           const RenderOptions& options) {
  simdjson::dom::parser parser;
  element root;
  if (parser.parse(answer_json.data(), answer_json.size()).get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("hawk's answer is not JSON");
  }
  array workers;
  if (root["workers"].get(workers) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("hawk's answer has no \"workers\" array");
  }
  bool dry_run = false;
  if (root["dryRun"].get(dry_run) == simdjson::SUCCESS && dry_run) {
    return RenderDryRun(root, workers);
  }
  ApplyView view;
  std::string& out = view.text;
  absl::StrAppend(&out, "version ", Str(root, "version"));
  if (std::string generation = Str(root, "generation"); !generation.empty()) {
    absl::StrAppend(&out, "  generation ", generation);
  }
  absl::StrAppend(&out, "  delivery ", Str(root, "delivery"), "\n");
  bool all = true;
  size_t count = 0;
  for (element worker : workers) {
    ++count;
    int64_t pid = 0;
    if (worker["pid"].get(pid) != simdjson::SUCCESS) pid = 0;
    std::string result = Str(worker, "result");
    bool applied = result == "APPLIED";
    all = all && applied;
    absl::StrAppend(&out, "worker ", pid, " ", Str(worker, "role"), "  ",
                    Colored(result, applied ? "\x1b[32m" : "\x1b[33m", options.color));
    if (std::string reason = Str(worker, "reason"); !reason.empty()) {
      absl::StrAppend(&out, "  ", reason);
    }
    absl::StrAppend(&out, "\n");
    AppendStaleAndRefused(worker, &out);
  }
  if (std::string warning = Str(root, "warning"); !warning.empty()) {
    absl::StrAppend(&out, Colored("warning: ", "\x1b[33m", options.color), warning, "\n");
  }
  view.all_applied = all && count > 0;
  return view;
}

}  // namespace hawk::status
