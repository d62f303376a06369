#include "agent/parse/show_stat.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

constexpr absl::string_view kWhat = "show stat";
constexpr int kAbsent = -1;

int Column(const std::vector<absl::string_view>& header, absl::string_view name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return kAbsent;
}

}  // namespace

absl::StatusOr<FrontendTotals> ParseFrontendTotals(absl::string_view reply) {
  FrontendTotals totals;
  int svname = kAbsent, scur = kAbsent, stot = kAbsent, conn_tot = kAbsent;
  bool have_header = false;
  absl::Status walked =
      internal::ForEachReplyLine(kWhat, reply, [&](const internal::Line& line) -> absl::Status {
        if (!have_header) {
          if (line.text.substr(0, 2) != "# ") {
            return internal::LineError(kWhat, line, "expected the \"# pxname,…\" header");
          }
          std::vector<absl::string_view> header = absl::StrSplit(line.text.substr(2), ',');
          svname = Column(header, "svname");
          scur = Column(header, "scur");
          stot = Column(header, "stot");
          conn_tot = Column(header, "conn_tot");
          if (svname == kAbsent || scur == kAbsent || stot == kAbsent) {
            return internal::LineError(kWhat, line, "no svname, scur or stot column");
          }
          have_header = true;
          return absl::OkStatus();
        }
        std::vector<absl::string_view> cells = absl::StrSplit(line.text, ',');
        if (static_cast<int>(cells.size()) <= svname || cells[svname] != "FRONTEND") {
          return absl::OkStatus();  // a listener or server row: not asked for, not counted
        }
        auto number = [&](int column, int64_t* out) -> absl::Status {
          if (column >= static_cast<int>(cells.size()) ||
              !internal::ParseUnsigned(cells[column], out)) {
            return internal::LineError(kWhat, line, "a malformed counter");
          }
          return absl::OkStatus();
        };
        int64_t accepted = 0, current = 0;
        bool has_conn_tot = conn_tot != kAbsent && conn_tot < static_cast<int>(cells.size()) &&
                            !cells[conn_tot].empty();
        if (absl::Status s = number(has_conn_tot ? conn_tot : stot, &accepted); !s.ok()) return s;
        if (absl::Status s = number(scur, &current); !s.ok()) return s;
        ++totals.frontends;
        totals.accepted += accepted;
        totals.current += current;
        return absl::OkStatus();
      });
  if (!walked.ok()) return walked;
  if (!have_header) return absl::InvalidArgumentError("show stat: empty reply");
  return totals;
}

}  // namespace hawk::parse
