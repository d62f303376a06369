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
    array stale;
    if (worker["stale"].get(stale) == simdjson::SUCCESS) {
      for (element s : stale) {
        std::string field = Str(s, "field");
        absl::StrAppend(&out, "  stale   ", Str(s, "object"), field.empty() ? "" : " ", field,
                        ": wants ", Str(s, "desired"), ", has ", Str(s, "actual"));
        if (std::string reason = Str(s, "reason"); !reason.empty()) {
          absl::StrAppend(&out, " (", reason, ")");
        }
        absl::StrAppend(&out, "\n");
      }
    }
    array refused;
    if (worker["refused"].get(refused) == simdjson::SUCCESS) {
      for (element r : refused) {
        absl::StrAppend(&out, "  refused ", Str(r, "object"), ": `", Str(r, "command"),
                        "`: HAProxy replied \"", Str(r, "reply"), "\"\n");
      }
    }
  }
  if (std::string warning = Str(root, "warning"); !warning.empty()) {
    absl::StrAppend(&out, Colored("warning: ", "\x1b[33m", options.color), warning, "\n");
  }
  view.all_applied = all && count > 0;
  return view;
}

}  // namespace hawk::status
