#pragma once

// The ingress document bench/state_codec and bench/put_memory read: `servers` servers of backend
// be_app and a map of `entries` entries, map entry 5's value being `changed_value` (what a
// one-change PUT changes).

#include <string>

#include "absl/strings/str_cat.h"

namespace hawk::bench {

inline std::string IngressDocument(int servers, int entries, const std::string& changed_value) {
  std::string json = R"({"version":"v1","generation":"1","backends":[{"name":"be_app","servers":[)";
  for (int i = 1; i <= servers; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name":"SRV_)", i, R"(","address":"127.0.0.)",
                    1 + i % 200, R"(","port":)", 8000 + i % 100, R"(,"state":"READY"})");
  }
  absl::StrAppend(&json, R"(]}],"maps":[{"name":"/etc/haproxy/hosts.map","entries":[)");
  for (int i = 0; i < entries; ++i) {
    absl::StrAppend(&json, i ? "," : "", R"({"key":"host)", i, R"(.example.com","value":")",
                    i == 5 ? changed_value : absl::StrCat("be_", i % 7), R"("})");
  }
  absl::StrAppend(&json, "]}]}");
  return json;
}

}  // namespace hawk::bench
