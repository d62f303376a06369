#include "agent/plan/server_lines.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/optional.h"
#include "agent/model/cli_safety.h"
#include "agent/parse/haproxy_config.h"
#include "agent/plan/plan.h"

namespace hawk::plan {
namespace {

// A template of more slots than this is left alone (HAProxy itself caps a proxy's servers far
// lower in practice; this only bounds what a hostile file can make hawk write).
constexpr int64_t kMaxTemplateSlots = 1000000;
// Notes beyond these are counted, not listed: a reload's log stays readable at 10,000 servers.
constexpr int kMaxNotes = 20;

struct Word {
  size_t begin = 0, end = 0;  // the raw bytes, quotes included
  std::string text;           // as HAProxy reads it: unquoted, unescaped
};

struct Line {
  std::vector<Word> words;
  size_t content_end = 0;  // the end of the last word (where words are appended)
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// HAProxy's reading of a configuration line (cfgparse.c, parse_line): blanks separate words,
// "…" and '…' quote, a backslash escapes the next byte outside '…', an unquoted '#' starts a
// comment.
Line SplitLine(absl::string_view line) {
  Line out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i >= line.size() || line[i] == '#' || line[i] == '\r') break;
    Word word;
    word.begin = i;
    char quote = 0;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote == 0 && (IsBlank(c) || c == '#' || c == '\r')) break;
      if (c == '\\' && quote != '\'' && i + 1 < line.size()) {
        word.text.push_back(line[++i]);
      } else if ((c == '"' || c == '\'') && (quote == 0 || quote == c)) {
        quote = quote == 0 ? c : 0;
      } else {
        word.text.push_back(c);
      }
    }
    word.end = i;
    out.content_end = i;
    out.words.push_back(std::move(word));
  }
  return out;
}

// `server` keywords that take one value (HAProxy 2.6 to 3.4): their value is skipped, never
// read as a flag.
bool TakesValue(absl::string_view keyword) {
  static const auto* const kWithValue =
      new absl::flat_hash_set<absl::string_view>{"addr",
                                                 "agent-addr",
                                                 "agent-inter",
                                                 "agent-port",
                                                 "agent-send",
                                                 "alpn",
                                                 "ca-file",
                                                 "check-alpn",
                                                 "check-pool-conn-name",
                                                 "check-proto",
                                                 "check-sni",
                                                 "ciphers",
                                                 "ciphersuites",
                                                 "client-sigalgs",
                                                 "cookie",
                                                 "crl-file",
                                                 "crt",
                                                 "curves",
                                                 "downinter",
                                                 "error-limit",
                                                 "fall",
                                                 "fastinter",
                                                 "guid",
                                                 "hash-key",
                                                 "id",
                                                 "init-addr",
                                                 "init-state",
                                                 "inter",
                                                 "interface",
                                                 "log-bufsize",
                                                 "log-proto",
                                                 "max-reuse",
                                                 "maxconn",
                                                 "maxqueue",
                                                 "minconn",
                                                 "namespace",
                                                 "npn",
                                                 "observe",
                                                 "on-error",
                                                 "on-marked-down",
                                                 "on-marked-up",
                                                 "pool-conn-name",
                                                 "pool-low-conn",
                                                 "pool-max-conn",
                                                 "pool-purge-delay",
                                                 "port",
                                                 "proto",
                                                 "redir",
                                                 "resolve-net",
                                                 "resolve-opts",
                                                 "resolve-prefer",
                                                 "resolvers",
                                                 "rise",
                                                 "send-proxy-v2-options",
                                                 "shard",
                                                 "sigalgs",
                                                 "slowstart",
                                                 "sni",
                                                 "socks4",
                                                 "source",
                                                 "ssl-max-ver",
                                                 "ssl-min-ver",
                                                 "tcp-ut",
                                                 "track",
                                                 "usesrc",
                                                 "verify",
                                                 "verifyhost",
                                                 "weight",
                                                 "ws"};
  return kWithValue->contains(keyword) || absl::StartsWith(keyword, "set-proxy-v2-tlv-fmt(");
}

// A configured address hawk may replace: an IP literal with an optional port (`1.2.3.4`,
// `1.2.3.4:80`, `[::1]:80`, `ipv4@…`, `ipv6@…`). `port` is what follows the host (":80", or "").
struct ConfiguredAddress {
  std::string host;
  std::string port;
};

absl::optional<ConfiguredAddress> ReadConfiguredAddress(absl::string_view token) {
  if (!absl::ConsumePrefix(&token, "ipv4@")) (void)absl::ConsumePrefix(&token, "ipv6@");
  ConfiguredAddress out;
  if (absl::StartsWith(token, "[")) {
    size_t close = token.find(']');
    if (close == absl::string_view::npos) return absl::nullopt;
    out.host = std::string(token.substr(1, close - 1));
    out.port = std::string(token.substr(close + 1));
    if (!out.port.empty() && out.port[0] != ':') return absl::nullopt;
  } else {
    size_t colon = token.rfind(':');
    out.host = std::string(token.substr(0, colon));
    if (colon != absl::string_view::npos) out.port = std::string(token.substr(colon));
  }
  if (!model::IsIpLiteral(out.host)) return absl::nullopt;
  return out;
}

std::string HostText(absl::string_view address) {
  if (address.find(':') != absl::string_view::npos) return absl::StrCat("[", address, "]");
  return std::string(address);
}

struct Edit {
  size_t begin, end;
  std::string text;
};

std::string ApplyEdits(absl::string_view line, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(line.size() + 32);
  size_t at = 0;
  for (const Edit& edit : edits) {
    absl::StrAppend(&out, line.substr(at, edit.begin - at));
    absl::StrAppend(&out, edit.text);
    at = edit.end;
  }
  absl::StrAppend(&out, line.substr(at));
  return out;
}

class Writer {
 public:
  explicit Writer(const model::DesiredState& desired) : desired_(desired) {}

  ServerLines Run(absl::string_view config) {
    result_.config.reserve(config.size() + config.size() / 4);
    size_t at = 0;
    while (at < config.size()) {
      size_t eol = config.find('\n', at);
      size_t next = eol == absl::string_view::npos ? config.size() : eol + 1;
      absl::string_view line = config.substr(at, next - at);
      absl::string_view body = absl::StripSuffix(line, "\n");
      absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(body);
      if (absl::StartsWith(trimmed, kRuntimeBeginMarker)) {
        // Servers hawk wrote at the end of this section: written again from the desired state.
        size_t end = FindRuntimeEnd(config, next);
        if (end != absl::string_view::npos) {
          at = end;
          continue;
        }
      }
      if (absl::StartsWith(trimmed, kTemplateBeginMarker)) {
        // An expansion hawk wrote: the template again, if its end marker is there.
        size_t end = FindEndMarker(config, next);
        if (end != absl::string_view::npos) {
          std::string indent(body.substr(0, body.size() - trimmed.size()));
          std::string original = absl::StrCat(indent, trimmed.substr(kTemplateBeginMarker.size()));
          // The template line ends as the block did ("\n", or nothing at the end of the file).
          if (config[end - 1] == '\n') original.push_back('\n');
          OnLine(original);
          at = end;
          continue;
        }
      }
      OnLine(line);
      at = next;
    }
    EndSection();
    if (notes_ > kMaxNotes) {
      result_.notes.push_back(absl::StrCat("and ", notes_ - kMaxNotes, " more servers"));
    }
    result_.changed = result_.config != config;
    result_.undeclared =
        static_cast<int>(desired_.server_count()) - declared_ - result_.runtime_written;
    if (result_.undeclared < 0) result_.undeclared = 0;
    return std::move(result_);
  }

 private:
  // The end of a section: the managed servers it does not declare, which `add server` creates at
  // runtime, written in hawk's block.
  void EndSection() {
    if (backend_ == nullptr) return;
    std::vector<std::pair<const std::string*, const model::ServerSpec*>> missing;
    for (const auto& [name, spec] : model::SortedByName(backend_->servers)) {
      if (!seen_.contains(*name) && WhyNotCreatable(*spec).empty())
        missing.emplace_back(name, spec);
    }
    backend_ = nullptr;
    if (missing.empty()) return;
    // After a section whose last line lacks its newline (the end of the file).
    if (!result_.config.empty() && result_.config.back() != '\n') result_.config.push_back('\n');
    absl::StrAppend(&result_.config, "    ", kRuntimeBeginMarker, "\n");
    for (const auto& [name, spec] : missing) {
      absl::StrAppend(&result_.config, "    server ", *name, " ", HostText(spec->address), ":",
                      *spec->port);
      if (spec->weight) absl::StrAppend(&result_.config, " weight ", *spec->weight);
      if (spec->state == model::ServerState::kMaint) absl::StrAppend(&result_.config, " disabled");
      absl::StrAppend(&result_.config, "\n");
      ++result_.runtime_written;
    }
    absl::StrAppend(&result_.config, "    ", kRuntimeEndMarker, "\n");
  }

  // The offset just past the line starting with `end_marker` that closes a block starting at
  // `from`; npos when a line for which `stops(line)` holds, or the end of the file, comes first.
  template <typename Stops>
  static size_t FindBlockEnd(absl::string_view config, size_t from, absl::string_view end_marker,
                             Stops stops) {
    size_t at = from;
    while (at < config.size()) {
      size_t eol = config.find('\n', at);
      size_t next = eol == absl::string_view::npos ? config.size() : eol + 1;
      absl::string_view line = config.substr(at, next - at);
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), end_marker)) return next;
      if (stops(line)) return absl::string_view::npos;
      at = next;
    }
    return absl::string_view::npos;
  }
  // A template's expansion ends before the next one begins.
  static size_t FindEndMarker(absl::string_view config, size_t from) {
    return FindBlockEnd(config, from, kTemplateEndMarker, [](absl::string_view line) {
      return absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), kTemplateBeginMarker);
    });
  }
  // The servers hawk wrote at the end of a section end before the next section.
  static size_t FindRuntimeEnd(absl::string_view config, size_t from) {
    return FindBlockEnd(config, from, kRuntimeEndMarker, [](absl::string_view line) {
      Line words = SplitLine(absl::StripSuffix(line, "\n"));
      return !words.words.empty() && parse::IsSectionKeyword(words.words[0].text);
    });
  }

  void OnLine(absl::string_view line) {
    absl::string_view body = absl::StripSuffix(line, "\n");
    absl::string_view newline = line.substr(body.size());
    Line words = SplitLine(body);
    if (words.words.empty()) {
      absl::StrAppend(&result_.config, line);
      return;
    }
    const std::string& keyword = words.words[0].text;
    if (parse::IsSectionKeyword(keyword)) {
      EndSection();
      seen_.clear();
      section_.clear();
      if ((keyword == "backend" || keyword == "listen") && words.words.size() >= 2) {
        section_ = words.words[1].text;
        auto it = desired_.backends.find(section_);
        if (it != desired_.backends.end() && !it->second.servers.empty()) backend_ = &it->second;
      }
      absl::StrAppend(&result_.config, line);
      return;
    }
    if (backend_ != nullptr && keyword == "server" && words.words.size() >= 3) {
      seen_.insert(words.words[1].text);
      auto it = backend_->servers.find(words.words[1].text);
      if (it != backend_->servers.end()) {
        ++declared_;
        absl::StrAppend(&result_.config, RewriteServer(body, words, it->first, it->second));
        absl::StrAppend(&result_.config, newline);
        return;
      }
    }
    if (backend_ != nullptr && keyword == "server-template" && words.words.size() >= 4 &&
        ExpandTemplate(body, newline, words)) {
      return;
    }
    absl::StrAppend(&result_.config, line);
  }

  // The line of server `name` with `spec` written in.
  std::string RewriteServer(absl::string_view body, const Line& line, const std::string& name,
                            const model::ServerSpec& spec) {
    std::vector<Edit> edits;
    const Word& address = line.words[2];
    bool address_managed = true;
    if (absl::optional<ConfiguredAddress> configured = ReadConfiguredAddress(address.text)) {
      std::string host = configured->host.find(':') != std::string::npos
                             ? absl::StrCat("[", configured->host, "]")
                             : configured->host;
      if (model::IsIpLiteral(spec.address)) {
        host = HostText(spec.address);
      } else {
        Note(name, absl::StrCat("its address is the hostname \"", spec.address,
                                "\", which HAProxy would resolve when it starts"));
        address_managed = false;
      }
      std::string port = spec.port ? absl::StrCat(":", *spec.port) : configured->port;
      std::string text = host + port;
      if (text != address.text) edits.push_back({address.begin, address.end, std::move(text)});
    } else {
      Note(name, absl::StrCat("its configured address \"", address.text,
                              "\" is not an IP literal with a port (DNS or the operator owns it)"));
      address_managed = false;
    }
    bool has_weight = false, has_disabled = false;
    bool maint = spec.state == model::ServerState::kMaint;
    for (size_t i = 3; i < line.words.size(); ++i) {
      const Word& word = line.words[i];
      if (word.text == "weight" && i + 1 < line.words.size()) {
        has_weight = true;
        const Word& value = line.words[i + 1];
        if (spec.weight && value.text != absl::StrCat(*spec.weight)) {
          edits.push_back({value.begin, value.end, absl::StrCat(*spec.weight)});
        }
        ++i;
      } else if (TakesValue(word.text)) {
        ++i;
      } else if (spec.state &&
                 ((word.text == "disabled" && !maint) || (word.text == "enabled" && maint))) {
        // The word and the blanks before it.
        size_t begin = word.begin;
        while (begin > 0 && IsBlank(body[begin - 1])) --begin;
        edits.push_back({begin, word.end, ""});
      } else if (word.text == "disabled") {
        has_disabled = true;
      }
    }
    std::string appended;
    if (spec.weight && !has_weight) absl::StrAppend(&appended, " weight ", *spec.weight);
    if (maint && !has_disabled) absl::StrAppend(&appended, " disabled");
    if (!appended.empty()) edits.push_back({line.content_end, line.content_end, appended});
    if (address_managed || spec.port || spec.weight || spec.state) ++result_.servers_written;
    if (spec.state == model::ServerState::kDrain) {
      Note(name,
           "DRAIN has no configuration keyword: written as enabled, the server-state file "
           "(--server-state-file) carries the drain");
    }
    return ApplyEdits(body, std::move(edits));
  }

  // Replaces a template holding a managed slot by its servers; false (nothing written) when it
  // holds none or cannot be expanded.
  bool ExpandTemplate(absl::string_view body, absl::string_view newline, const Line& line) {
    const std::string& prefix = line.words[1].text;
    absl::string_view range = line.words[2].text;
    int64_t first = 1, last = 0;
    size_t dash = range.find('-');
    if (dash == absl::string_view::npos) {
      if (!absl::SimpleAtoi(range, &last)) return false;
    } else if (!absl::SimpleAtoi(range.substr(0, dash), &first) ||
               !absl::SimpleAtoi(range.substr(dash + 1), &last)) {
      return false;
    }
    if (first < 0 || last < first || last - first >= kMaxTemplateSlots) return false;
    int managed = 0;
    for (int64_t i = first; i <= last; ++i) {
      std::string name = absl::StrCat(prefix, i);
      if (backend_->servers.contains(name)) ++managed;
      seen_.insert(std::move(name));  // declared, expanded or not
    }
    if (managed == 0) return false;
    declared_ += managed;  // declared, written or not
    const Word& address = line.words[3];
    if (!ReadConfiguredAddress(address.text)) {
      Note(
          absl::StrCat(prefix, first, "-", last),
          absl::StrCat("the template's address \"", address.text,
                       "\" is not an IP literal with a port (DNS or the operator owns its slots)"));
      return false;
    }
    absl::string_view indent = body.substr(0, line.words[0].begin);
    absl::string_view template_text = body.substr(line.words[0].begin);
    absl::string_view rest = body.substr(address.begin, line.content_end - address.begin);
    // Lines end with "\n"; the end marker ends as the template did (without one at the end of
    // the file).
    std::string eol = newline.empty() ? "\n" : std::string(newline);
    absl::StrAppend(&result_.config, indent, kTemplateBeginMarker, template_text, eol);
    for (int64_t i = first; i <= last; ++i) {
      std::string name = absl::StrCat(prefix, i);
      std::string server = absl::StrCat(indent, "server ", name, " ", rest);
      auto it = backend_->servers.find(name);
      if (it == backend_->servers.end()) {
        absl::StrAppend(&result_.config, server, eol);
        continue;
      }
      absl::StrAppend(&result_.config,
                      RewriteServer(server, SplitLine(server), it->first, it->second), eol);
    }
    absl::StrAppend(&result_.config, indent, kTemplateEndMarker, "server-template ", prefix,
                    newline);
    ++result_.templates_expanded;
    return true;
  }

  void Note(absl::string_view server, absl::string_view why) {
    ++notes_;
    if (notes_ <= kMaxNotes) {
      result_.notes.push_back(absl::StrCat(section_, "/", server, ": not written: ", why));
    }
  }

  const model::DesiredState& desired_;
  const model::DesiredBackend* backend_ = nullptr;  // the managed servers of the current section
  std::string section_;
  absl::flat_hash_set<std::string> seen_;  // the servers the current section declares
  int declared_ = 0;
  int notes_ = 0;
  ServerLines result_;
};

}  // namespace

ServerLines WriteDesiredServers(absl::string_view config, const model::DesiredState& desired) {
  return Writer(desired).Run(config);
}

std::vector<std::pair<std::string, std::string>> ServersInHawkBlocks(absl::string_view config) {
  std::vector<std::pair<std::string, std::string>> servers;
  std::string section;
  bool in_block = false;
  for (absl::string_view line : absl::StrSplit(config, '\n')) {
    absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(trimmed, kRuntimeBeginMarker)) {
      in_block = true;
      continue;
    }
    if (absl::StartsWith(trimmed, kRuntimeEndMarker)) {
      in_block = false;
      continue;
    }
    Line words = SplitLine(line);
    if (words.words.empty()) continue;
    const std::string& keyword = words.words[0].text;
    if (parse::IsSectionKeyword(keyword)) {
      in_block = false;
      section = words.words.size() >= 2 ? words.words[1].text : "";
      continue;
    }
    if (in_block && keyword == "server" && words.words.size() >= 2 && !section.empty()) {
      servers.emplace_back(section, words.words[1].text);
    }
  }
  return servers;
}

}  // namespace hawk::plan
