#include "agent/reconcile/reply_verdict.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/reply.h"

namespace hawk::reconcile {
namespace {

std::string FirstLine(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  return std::string(text.substr(0, text.find('\n')));
}

bool IsMapSet(plan::ActionKind kind) {
  return kind == plan::ActionKind::kSetMapEntry || kind == plan::ActionKind::kUpsertMapEntry;
}

bool IsDelete(plan::ActionKind kind) {
  return kind == plan::ActionKind::kDelMapEntry || kind == plan::ActionKind::kDelAclPattern;
}

}  // namespace

ActionReply ClassifyActionReply(const plan::Action& action, const CommandResult& result,
                                bool as_add, bool leaving) {
  ActionReply out;
  auto stale = [&](std::string field, std::string desired, std::string actual, std::string reason) {
    out.stale = model::StaleObject{action.object(), std::move(field), std::move(desired),
                                   std::move(actual), std::move(reason)};
  };
  if (!result.ok()) {
    out.verdict = ReplyVerdict::kRefused;
    out.text = std::string(result.status().message());
    out.unexpected = true;
    stale(action.field(), action.desired(), "", out.text);
    return out;
  }
  parse::ClassifiedReply reply = parse::ClassifyMutationReply(*result);
  out.text = reply.text;
  if (reply.ok()) return out;
  bool server = plan::IsServerAction(action.kind);
  switch (reply.code) {
    case parse::ReplyCode::kProxyDisabled:
      if (server && leaving) {
        out.verdict = ReplyVerdict::kFrozen;
        out.stale = plan::FrozenItem(action);
        return out;
      }
      break;
    case parse::ReplyCode::kNoSuchServer:
    case parse::ReplyCode::kNoSuchBackend:
      if (server) {
        out.verdict = ReplyVerdict::kMissing;
        bool no_backend = reply.code == parse::ReplyCode::kNoSuchBackend;
        out.stale = model::StaleObject{
            no_backend ? absl::StrCat("backend/", action.backend) : action.object(), "", "present",
            "absent",
            no_backend ? absl::StrCat("worker has no backend ", action.backend)
                       : absl::StrCat("worker has no server ", action.backend, "/", action.server)};
        return out;
      }
      break;
    case parse::ReplyCode::kUnknownMap:
    case parse::ReplyCode::kUnknownAcl: {
      out.verdict = ReplyVerdict::kMissing;
      absl::string_view kind = absl::StartsWith(action.object(), "acl/") ? "acl" : "map";
      out.stale = model::StaleObject{action.object(), "", "present", "absent",
                                     absl::StrCat("worker has no ", kind, " ", action.map_or_acl)};
      return out;
    }
    case parse::ReplyCode::kEntryNotFound:
      if (IsMapSet(action.kind) && !as_add) {
        out.verdict = ReplyVerdict::kNeedsAdd;
        return out;
      }
      break;
    case parse::ReplyCode::kKeyNotFound:
      if (IsDelete(action.kind)) return out;  // gone already: what was wanted
      break;
    case parse::ReplyCode::kServerInUse:
      if (action.kind == plan::ActionKind::kDelServer) {
        out.verdict = ReplyVerdict::kInUse;
        return out;
      }
      break;
    case parse::ReplyCode::kNotInMaintenance:
      // `del server` alone on a frozen worker (plan::Action::only_del): the server is in
      // rotation there and no command can take it out. It stays, reported frozen.
      if (action.kind == plan::ActionKind::kDelServer && action.only_del && leaving) {
        out.verdict = ReplyVerdict::kFrozen;
        out.stale = plan::FrozenItem(action);
        return out;
      }
      break;
    case parse::ReplyCode::kStaticBackend:
      // The backend's configuration decides it: no reason to look at the worker again.
      out.verdict = ReplyVerdict::kRefused;
      stale("", "present", "absent",
            absl::StrCat("backend ", action.backend,
                         " cannot hold servers created at runtime: its balance algorithm is not "
                         "dynamic (",
                         FirstLine(reply.text), ")"));
      return out;
    default:
      break;
  }
  out.verdict = ReplyVerdict::kRefused;
  out.unexpected = true;
  stale(action.field(), action.desired(), "", absl::StrCat("refused: ", FirstLine(reply.text)));
  return out;
}

absl::optional<std::string> TransportFailure(const std::vector<cli::Command>& sent,
                                             const std::vector<CommandResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const absl::Status& status = results[i].status();
    if (absl::IsNotFound(status) || absl::IsUnavailable(status) ||
        absl::IsDeadlineExceeded(status)) {
      return absl::StrCat("apply `", sent[i].text, "`: ", status.message());
    }
  }
  return absl::nullopt;
}

}  // namespace hawk::reconcile
