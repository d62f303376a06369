#include "agent/drain/drain_hub.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/cli/command.h"
#include "agent/http/response.h"
#include "agent/parse/show_stat.h"

namespace hawk::drain {
namespace {
constexpr absl::Duration kMinPoll = absl::Milliseconds(50);
constexpr absl::Duration kMaxPoll = absl::Milliseconds(250);
constexpr absl::Duration kPollTimeout = absl::Seconds(2);
// Frontends only (type 1), every proxy (-1), every server (-1): one line per frontend.
constexpr absl::string_view kShowFrontends = "show stat -1 1 -1";
}  // namespace

DrainHub::DrainHub(uv_loop_t* loop, cli::MasterClient* client,
                   const registry::WorkerRegistry* registry, std::function<absl::Time()> clock)
    : client_(client), registry_(registry), clock_(std::move(clock)), tick_(loop), soon_(loop) {}

DrainHub::~DrainHub() {
  for (auto& waiter : waiters_) {
    if (waiter->responder.alive()) Answer(waiter.get(), DrainReason::kUnavailable, "hawk stops");
  }
}

absl::Duration DrainHub::PollInterval() const {
  absl::Duration shortest = absl::InfiniteDuration();
  for (const auto& waiter : waiters_) shortest = std::min(shortest, waiter->params.quiet);
  return std::clamp(shortest / 4, kMinPoll, kMaxPoll);
}

void DrainHub::Handle(const http::Request& request, http::Responder responder) {
  absl::StatusOr<DrainParams> params =
      ParseDrainParams(request.QueryParam("quietMs"), request.QueryParam("boundMs"));
  if (!params.ok()) {
    responder.Send(http::ErrorFromStatus(params.status()));
    return;
  }
  auto waiter = std::make_unique<Waiter>(Waiter{std::move(responder), *params, clock_()});
  if (!client_->reachable()) {
    Answer(waiter.get(), DrainReason::kUnavailable,
           absl::StrCat("the master CLI is unreachable: ", client_->last_error().message()));
    return;
  }
  bool first = waiters_.empty();
  absl::Duration before = first ? absl::InfiniteDuration() : PollInterval();
  waiters_.push_back(std::move(waiter));
  if (first) {
    activity_.Reset();  // samples of an earlier drain say nothing of now
    open_.clear();
  }
  if (first || PollInterval() != before) {
    tick_.StartRepeating(PollInterval(), PollInterval(), [this] { Tick(); });
  }
  if (!polling_) Poll();  // the baseline now, not a poll interval later
}

void DrainHub::Tick() {
  Settle(false);
  if (!waiters_.empty() && !polling_) Poll();
}

void DrainHub::Poll() {
  std::vector<int> pids;
  std::vector<cli::Command> commands;
  for (const model::WorkerReport& worker : registry_->report().workers) {
    // Not relayed: HAProxy 2.6's master keeps a CLI slot for good when it relays to a worker
    // that is exiting (registry/relay_policy.h); such a worker has closed its listeners anyway.
    if (!worker.not_relayed.empty() || !client_->RelayAllowed(worker.pid)) continue;
    pids.push_back(worker.pid);
    commands.push_back(cli::Command::ForWorker(worker.pid, std::string(kShowFrontends)));
  }
  absl::Time asked = clock_();
  ++polls_;
  if (commands.empty()) {
    OnSample(asked, {}, {});
    return;
  }
  polling_ = true;
  client_->Submit(std::move(commands),
                  lifetime_.Guard([this, asked, pids = std::move(pids)](
                                      std::vector<cli::CommandResult> results) mutable {
                    polling_ = false;
                    OnSample(asked, std::move(pids), std::move(results));
                  }),
                  kPollTimeout);
}

void DrainHub::OnSample(absl::Time asked, std::vector<int> pids,
                        std::vector<cli::CommandResult> results) {
  ConnectionTotals totals;
  open_.clear();
  std::string failure;
  for (size_t i = 0; i < pids.size() && i < results.size(); ++i) {
    // A worker that exited meanwhile (NotFound) accepts nothing more: left out.
    if (!results[i].ok()) {
      failure = std::string(results[i].status().message());
      continue;
    }
    absl::StatusOr<parse::FrontendTotals> frontends = parse::ParseFrontendTotals(*results[i]);
    if (!frontends.ok()) {
      failure = std::string(frontends.status().message());
      continue;
    }
    totals[pids[i]] = frontends->accepted;
    open_[pids[i]] = frontends->current;
  }
  if (totals.empty() && !pids.empty()) {
    // No worker answered: with the master gone nothing can be told; otherwise look again.
    if (!client_->reachable()) {
      Settle(true, absl::StrCat("the master CLI is unreachable: ", failure));
      return;
    }
    Settle(false);
    return;
  }
  activity_.Observe(asked, clock_(), totals);
  Settle(false);
  ArmSoon();
}

void DrainHub::ArmSoon() {
  if (waiters_.empty()) return;
  absl::Time now = clock_();
  absl::Time earliest = absl::InfiniteFuture();
  for (const auto& waiter : waiters_) {
    absl::Time since = std::max(waiter->started, activity_.quiet_since());
    earliest =
        std::min({earliest, since + waiter->params.quiet, waiter->started + waiter->params.bound});
  }
  absl::Duration wait = earliest - now;
  if (wait <= absl::ZeroDuration() || wait >= PollInterval()) return;  // the next tick does
  // Rounded up (uv::Timer does): a poll asked a moment early shows quiet only up to then.
  soon_.Start(wait, [this] { Tick(); });
}

void DrainHub::Settle(bool unavailable, absl::string_view why) {
  absl::Time now = clock_();
  for (auto& waiter : waiters_) {
    if (!waiter->responder.alive()) continue;
    if (unavailable) {
      Answer(waiter.get(), DrainReason::kUnavailable, why);
      continue;
    }
    if (absl::optional<DrainReason> reason =
            Decide(waiter->params, waiter->started, activity_, now)) {
      Answer(waiter.get(), *reason, "");
    }
  }
  waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                [](const auto& w) { return !w->responder.alive(); }),
                 waiters_.end());
  if (waiters_.empty()) {
    tick_.Stop();
    soon_.Stop();
  }
}

void DrainHub::Answer(Waiter* waiter, DrainReason reason, absl::string_view why) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("reason").String(DrainReasonName(reason));
  w.Key("waitedMs").Int(absl::ToInt64Milliseconds(clock_() - waiter->started));
  w.Key("quietMs").Int(absl::ToInt64Milliseconds(waiter->params.quiet));
  w.Key("boundMs").Int(absl::ToInt64Milliseconds(waiter->params.bound));
  w.Key("workers").BeginArray();
  for (const model::WorkerReport& worker : registry_->report().workers) {
    auto open = open_.find(worker.pid);
    w.BeginObject();
    w.Key("pid").Int(worker.pid);
    w.Key("role").String(model::WorkerRoleName(worker.role));
    // From this drain's last look, else from the registry's last poll (`show info` CurrConns).
    w.Key("connections").Int(open != open_.end() ? open->second : worker.connections);
    w.EndObject();
  }
  w.EndArray();
  int status = 200;
  if (reason == DrainReason::kUnavailable) {
    status = 503;
    http::WriteErrorMember("UNAVAILABLE", why, "", &w);
  }
  w.EndObject();
  waiter->responder.Send(http::JsonResponse(status, w.Take()));
}

}  // namespace hawk::drain
