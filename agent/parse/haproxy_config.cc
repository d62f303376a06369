#include "agent/parse/haproxy_config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace hawk::parse {

bool IsSectionKeyword(absl::string_view word) {
  static constexpr absl::string_view kSections[] = {
      "global", "defaults", "frontend",    "backend",   "listen",      "resolvers",
      "peers",  "userlist", "program",     "mailers",   "http-errors", "ring",
      "cache",  "fcgi-app", "log-forward", "crt-store", "traces",      "acme"};
  for (absl::string_view section : kSections) {
    if (word == section) return true;
  }
  return false;
}

namespace {

// The words of a line without its comment.
std::vector<absl::string_view> Words(absl::string_view line) {
  size_t hash = line.find('#');
  while (hash != absl::string_view::npos && hash > 0 && line[hash - 1] == '\\') {
    hash = line.find('#', hash + 1);
  }
  if (hash != absl::string_view::npos) line = line.substr(0, hash);
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
}

// A time value that is zero whatever its unit (`0`, `0s`, `0ms`, `0m`, `00us`, …).
bool IsZeroTime(absl::string_view value) {
  size_t digits = 0;
  while (digits < value.size() && absl::ascii_isdigit(static_cast<unsigned char>(value[digits]))) {
    if (value[digits] != '0') return false;
    ++digits;
  }
  return digits > 0;
}

// HAProxy's time format: digits, then an optional unit; `default_unit` without one.
absl::optional<absl::Duration> ParseHaproxyTime(absl::string_view value,
                                                absl::Duration default_unit) {
  size_t digits = 0;
  while (digits < value.size() && absl::ascii_isdigit(static_cast<unsigned char>(value[digits]))) {
    ++digits;
  }
  int64_t count = 0;
  if (digits == 0 || digits > 12 || !absl::SimpleAtoi(value.substr(0, digits), &count)) {
    return absl::nullopt;
  }
  absl::string_view unit = value.substr(digits);
  absl::Duration scale;
  if (unit.empty()) {
    scale = default_unit;
  } else if (unit == "us") {
    scale = absl::Microseconds(1);
  } else if (unit == "ms") {
    scale = absl::Milliseconds(1);
  } else if (unit == "s") {
    scale = absl::Seconds(1);
  } else if (unit == "m") {
    scale = absl::Minutes(1);
  } else if (unit == "h") {
    scale = absl::Hours(1);
  } else if (unit == "d") {
    scale = absl::Hours(24);
  } else {
    return absl::nullopt;
  }
  return scale * count;
}

}  // namespace

absl::optional<absl::Duration> GraceFromConfig(absl::string_view config_text) {
  std::string section;
  absl::optional<absl::Duration> grace = absl::ZeroDuration();
  for (absl::string_view line : absl::StrSplit(config_text, '\n')) {
    std::vector<absl::string_view> words = Words(line);
    if (words.empty()) continue;
    if (IsSectionKeyword(words[0])) {
      section = std::string(words[0]);
      continue;
    }
    if (section != "global" || words[0] != "grace") continue;
    grace = words.size() == 2 ? ParseHaproxyTime(words[1], absl::Milliseconds(1)) : absl::nullopt;
  }
  return grace;
}

std::vector<std::string> AdviseOnConfig(absl::string_view config_text) {
  std::string section;
  bool master_worker = false, grace = false, hard_stop_after = false;
  // HAProxy starts every `defaults` section from scratch, and a proxy takes the option from the
  // defaults section before it unless it says `option` or `no option` itself.
  bool defaults_idle_close = false;
  bool proxy_idle_close = false;
  int proxies_without_idle_close = 0;
  auto end_section = [&] {
    if ((section == "frontend" || section == "listen") && !proxy_idle_close) {
      ++proxies_without_idle_close;
    }
  };
  for (absl::string_view line : absl::StrSplit(config_text, '\n')) {
    std::vector<absl::string_view> words = Words(line);
    if (words.empty()) continue;
    if (IsSectionKeyword(words[0])) {
      end_section();
      section = std::string(words[0]);
      if (section == "defaults") defaults_idle_close = false;
      proxy_idle_close = defaults_idle_close;
      continue;
    }
    if (section == "global") {
      if (words[0] == "master-worker") master_worker = true;
      if (words[0] == "grace" && words.size() > 1 && !IsZeroTime(words[1])) grace = true;
      if (words[0] == "hard-stop-after") hard_stop_after = true;
      continue;
    }
    bool negated = words[0] == "no";
    if (negated) words.erase(words.begin());
    if (words.size() >= 2 && words[0] == "option" && words[1] == "idle-close-on-response") {
      if (section == "defaults") defaults_idle_close = !negated;
      proxy_idle_close = !negated;
    }
  }
  end_section();
  std::vector<std::string> advice;
  if (!master_worker) {
    advice.push_back(
        "global: no `master-worker`: HAProxy must be started with -W (and -S for the master "
        "CLI hawk uses), or a restart without it leaves hawk blind");
  }
  if (!grace) {
    advice.push_back(
        "global: no `grace` (e.g. `grace 1s`): a leaving worker refuses server changes as soon "
        "as a reload starts (`Proxy is disabled.`), so keep-alive requests still on it are routed "
        "with the state it had; maps and ACLs still reach it");
  }
  if (!hard_stop_after) {
    advice.push_back(
        "global: no `hard-stop-after` (e.g. `hard-stop-after 30s`): a leaving worker with frozen "
        "server state may serve long-lived connections for ever");
  }
  if (proxies_without_idle_close > 0) {
    advice.push_back(
        "defaults/frontend: no `option idle-close-on-response`: a leaving worker closes idle "
        "keep-alive connections at soft-stop, under clients that are sending on them (clients "
        "that do not retry see errors on every reload)");
  }
  return advice;
}

}  // namespace hawk::parse
