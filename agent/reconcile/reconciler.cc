#include "agent/reconcile/reconciler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/base/log.h"
#include "agent/parse/maps.h"
#include "agent/parse/reply.h"
#include "agent/parse/servers_state.h"
#include "agent/parse/show_sess.h"
#include "agent/plan/commands.h"
#include "agent/plan/observed.h"

namespace hawk::reconcile {
namespace {

// A reconcile cut short (a reload closed the connection, the worker was not reachable yet) is
// retried after 5 ms, then 10, 20, … up to 1 s while it keeps failing: a reload is usually over
// within milliseconds, and the new worker must be seeded at once.
constexpr uint64_t kFirstRetryMs = 5;
constexpr uint64_t kMaxRetryMs = 1000;

uint64_t ToMs(absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Milliseconds(d)); }

bool IsServerAction(plan::ActionKind kind) {
  return kind == plan::ActionKind::kSetAddress || kind == plan::ActionKind::kSetFqdn ||
         kind == plan::ActionKind::kSetWeight || kind == plan::ActionKind::kSetState;
}

// The command as an operator would type it on the worker: without the `@!<pid> ` prefix.
std::string WithoutPrefix(const cli::Command& command) {
  absl::string_view line = command.line;
  if (absl::StartsWith(line, "@!")) {
    size_t space = line.find(' ');
    if (space != absl::string_view::npos) line.remove_prefix(space + 1);
  }
  return std::string(line);
}

std::string FirstLine(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  return std::string(text.substr(0, text.find('\n')));
}

// "backend/<be>/server/<srv>" → (be, srv); names cannot hold '/' (validated).
bool SplitServerObject(absl::string_view object, std::string* backend, std::string* server) {
  std::vector<std::string> parts = absl::StrSplit(object, '/');
  if (parts.size() != 4 || parts[0] != "backend" || parts[2] != "server") return false;
  *backend = parts[1];
  *server = parts[3];
  return true;
}

// Why a batch of mutations did not reach HAProxy, if it did not: the worker is gone (NotFound),
// the connection closed under it (a reload) or the deadline passed. Such an apply is retried, not
// reported: HAProxy did not refuse anything, and some commands may not have run.
absl::optional<std::string> TransportFailure(const std::vector<cli::Command>& sent,
                                             const std::vector<cli::CommandResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const absl::Status& status = results[i].status();
    if (absl::IsNotFound(status) || absl::IsUnavailable(status) ||
        absl::IsDeadlineExceeded(status)) {
      return absl::StrCat("apply `", WithoutPrefix(sent[i]), "`: ", status.message());
    }
  }
  return absl::nullopt;
}

}  // namespace

const char* PushResultName(PushResult result) {
  switch (result) {
    case PushResult::kApplied:
      return "APPLIED";
    case PushResult::kPartial:
      return "PARTIAL";
    case PushResult::kPending:
      return "PENDING";
  }
  return "PENDING";
}

struct Reconciler::WorkerState {
  int pid = 0;
  model::WorkerRole role = model::WorkerRole::kUnknown;
  bool busy = false;   // a reconcile is in progress
  bool dirty = false;  // run again when the current reconcile ends
  bool seed = false;   // appeared after hawk started: apply everything without observing first
  bool retry = false;  // the last reconcile failed: retry_timer will run it again
  int failures = 0;    // consecutive failed reconciles (the retry backs off)
  std::unique_ptr<uv::Timer> retry_timer;
  uint64_t running_seq = 0;
  std::shared_ptr<const model::DesiredState> running;  // the desired state being applied
  uint64_t synced_seq = 0;  // the push the last completed reconcile applied
  model::WorkerSync sync;
  std::vector<model::Refusal> refusals;  // gathered by the reconcile in progress
  std::string freeze_reply;              // the reply that froze this worker
  bool sessions_busy = false;
  absl::Time sessions_at = absl::InfinitePast();
};

struct Reconciler::Waiter {
  explicit Waiter(uv_loop_t* loop) : deadline(loop), first_check(loop) {}
  uint64_t seq = 0;
  int only_pid = 0;  // wait for this worker only (0: every target worker)
  std::function<void(PushOutcome)> done;
  uv::Timer deadline;
  uv::Timer first_check;
};

Reconciler::Reconciler(uv_loop_t* loop, cli::MasterClient* client,
                       registry::WorkerRegistry* registry, ReconcilerOptions options,
                       std::function<absl::Time()> wall_clock)
    : loop_(loop),
      client_(client),
      registry_(registry),
      options_(options),
      wall_clock_(std::move(wall_clock)),
      resync_timer_(loop) {}

Reconciler::~Reconciler() { *alive_ = false; }

cli::BatchCallback Reconciler::Guard(
    std::function<void(std::vector<cli::CommandResult>)> callback) {
  std::weak_ptr<bool> alive = alive_;
  return [alive, callback = std::move(callback)](std::vector<cli::CommandResult> results) {
    std::shared_ptr<bool> still = alive.lock();
    if (still && *still) callback(std::move(results));
  };
}

void Reconciler::Start() {
  registry_->AddListener(
      [this](const model::WorkersReport& report, const registry::WorkerChanges& changes) {
        OnWorkers(report, changes);
      });
  uint64_t every = ToMs(options_.resync_interval);
  resync_timer_.Start(every, every, [this] {
    // Drift repair: someone may have changed a worker behind hawk's back.
    for (auto& [pid, worker] : workers_) Kick(worker.get());
  });
}

bool Reconciler::IsTarget(model::WorkerRole role) const {
  if (role == model::WorkerRole::kCurrent) return true;
  return role == model::WorkerRole::kLeaving && options_.leaving_workers;
}

Reconciler::WorkerState* Reconciler::Find(int pid) {
  auto it = workers_.find(pid);
  return it == workers_.end() ? nullptr : it->second.get();
}

uint64_t Reconciler::SetDesired(model::DesiredState desired) {
  desired_ = std::make_shared<const model::DesiredState>(std::move(desired));
  ++desired_seq_;
  for (auto& [pid, worker] : workers_) Kick(worker.get());
  Notify();
  return desired_seq_;
}

void Reconciler::OnWorkers(const model::WorkersReport& report,
                           const registry::WorkerChanges& changes) {
  bool first = !seen_first_report_;
  seen_first_report_ = true;
  absl::flat_hash_map<int, bool> listed;
  for (const model::WorkerReport& w : report.workers) {
    listed[w.pid] = true;
    WorkerState* state = Find(w.pid);
    if (state == nullptr) {
      auto fresh = std::make_unique<WorkerState>();
      fresh->pid = w.pid;
      // Workers present when hawk starts hold unknown state: observe them. A worker that
      // appears later was just started from the config file: seed it without observing.
      fresh->seed = !first && std::find(changes.appeared.begin(), changes.appeared.end(), w.pid) !=
                                  changes.appeared.end();
      state = fresh.get();
      workers_.emplace(w.pid, std::move(fresh));
    }
    state->role = w.role;
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!listed.contains(it->first)) {
      workers_.erase(it++);  // callbacks in flight find it gone by pid
    } else {
      ++it;
    }
  }
  absl::Time now = wall_clock_();
  for (auto& [pid, worker] : workers_) {
    if (!worker->busy && !worker->retry && (worker->seed || worker->synced_seq < desired_seq_)) {
      Kick(worker.get());
    }
    if (!worker->busy && !worker->sync.stale.empty() &&
        now - worker->sessions_at >= options_.stale_sessions_refresh) {
      RefreshSessions(worker.get());
    }
  }
  CheckWaiters();
}

void Reconciler::Kick(WorkerState* worker) {
  if (!desired_ || !IsTarget(worker->role)) return;
  if (worker->busy) {
    worker->dirty = true;  // coalesced: the next run uses the latest desired state
    return;
  }
  worker->busy = true;
  worker->dirty = false;
  worker->retry = false;
  worker->running = desired_;
  worker->running_seq = desired_seq_;
  worker->refusals.clear();
  if (worker->seed) {
    worker->seed = false;
    Apply(worker, plan::PlanFullSeed(*desired_));
    return;
  }
  Observe(worker->pid, /*verify=*/false);
}

void Reconciler::Observe(int pid, bool verify) {
  WorkerState* worker = Find(pid);
  if (worker == nullptr) return;
  const model::DesiredState& desired = *worker->running;
  std::vector<cli::Command> commands;
  for (const model::DesiredBackend& b : desired.backends) {
    commands.push_back(cli::ForWorker(pid, absl::StrCat("show servers state ", b.name)));
  }
  for (const model::DesiredMap& m : desired.maps) {
    commands.push_back(cli::ForWorker(pid, absl::StrCat("show map ", m.name)));
  }
  for (const model::DesiredAcl& a : desired.acls) {
    commands.push_back(cli::ForWorker(pid, absl::StrCat("show acl ", a.name)));
  }
  if (commands.empty()) {
    Finish(worker, plan::Plan{});
    return;
  }
  client_->Submit(std::move(commands), Guard([this, pid, verify](auto results) {
                    OnObserved(pid, verify, std::move(results));
                  }),
                  options_.batch_timeout);
}

void Reconciler::OnObserved(int pid, bool verify, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid);
  if (worker == nullptr) return;
  const model::DesiredState& desired = *worker->running;
  plan::ObservedWorker observed;
  size_t i = 0;
  auto reply = [&](absl::string_view what) -> const std::string* {
    const cli::CommandResult& r = results[i++];
    if (!r.ok()) {
      Fail(worker, absl::StrCat("observe ", what, ": ", r.status().message()));
      return nullptr;
    }
    return &*r;
  };
  for (const model::DesiredBackend& b : desired.backends) {
    const std::string* text = reply(absl::StrCat("backend ", b.name));
    if (text == nullptr) return;
    absl::StatusOr<std::vector<parse::ServerStateRow>> rows = parse::ParseServersState(*text);
    if (rows.ok()) {
      observed.backends[b.name] = plan::FromServersState(*rows);
    } else {
      // `Can't find backend.`: this worker's config has no such backend.
      observed.backends[b.name] = plan::ObservedBackend{false, {}};
    }
  }
  for (const model::DesiredMap& m : desired.maps) {
    const std::string* text = reply(absl::StrCat("map ", m.name));
    if (text == nullptr) return;
    absl::StatusOr<std::vector<parse::MapEntry>> entries = parse::ParseMapEntries(*text);
    if (entries.ok()) {
      observed.maps[m.name] = plan::FromMapEntries(*entries);
    } else {
      observed.maps[m.name] = plan::ObservedMap{false, {}};
    }
  }
  for (const model::DesiredAcl& a : desired.acls) {
    const std::string* text = reply(absl::StrCat("acl ", a.name));
    if (text == nullptr) return;
    absl::StatusOr<std::vector<parse::AclEntry>> entries = parse::ParseAclEntries(*text);
    if (entries.ok()) {
      observed.acls[a.name] = plan::FromAclEntries(*entries);
    } else {
      observed.acls[a.name] = plan::ObservedAcl{false, {}};
    }
  }
  plan::PlanOptions options;
  options.servers_frozen = verify && worker->sync.frozen;
  plan::Plan plan = plan::PlanWorker(desired, observed, options);
  if (verify || plan.empty()) {
    Finish(worker, plan);
    return;
  }
  Apply(worker, std::move(plan));
}

void Reconciler::Apply(WorkerState* worker, plan::Plan plan) {
  int pid = worker->pid;
  std::vector<cli::Command> sent;
  std::vector<size_t> action_of;
  for (size_t a = 0; a < plan.actions.size(); ++a) {
    const plan::Action& action = plan.actions[a];
    if (IsServerAction(action.kind)) {
      for (cli::Command& command : plan::ServerCommands(pid, action)) {
        if (worker->sync.frozen) {
          // Refused before: HAProxy cannot unfreeze a stopped proxy, so do not ask again.
          worker->refusals.push_back(
              model::Refusal{action.object(), WithoutPrefix(command), worker->freeze_reply});
          continue;
        }
        sent.push_back(std::move(command));
        action_of.push_back(a);
      }
    } else {
      sent.push_back(plan::PrepareCommand(pid, action));
      action_of.push_back(a);
    }
  }
  if (sent.empty()) {
    Observe(pid, /*verify=*/true);
    return;
  }
  std::vector<cli::Command> copy = sent;
  client_->Submit(std::move(copy),
                  Guard([this, pid, plan = std::move(plan), sent = std::move(sent),
                         action_of = std::move(action_of)](auto replies) mutable {
                    OnFirstPhase(pid, std::move(plan), std::move(sent), std::move(action_of),
                                 std::move(replies));
                  }),
                  options_.batch_timeout);
}

bool Reconciler::Judge(WorkerState* worker, const std::string& object, const cli::Command& command,
                       const cli::CommandResult& result) {
  if (!result.ok()) {
    worker->refusals.push_back(
        model::Refusal{object, WithoutPrefix(command), std::string(result.status().message())});
    return false;
  }
  parse::ClassifiedReply reply = parse::ClassifyMutationReply(*result);
  if (reply.ok()) return true;
  if (reply.code == parse::ReplyCode::kProxyDisabled &&
      worker->role == model::WorkerRole::kLeaving && !worker->sync.frozen) {
    worker->sync.frozen = true;
    worker->sync.frozen_since = wall_clock_();
    worker->freeze_reply = reply.text;
    base::LogInfo("worker ", worker->pid, " is frozen: \"", reply.text,
                  "\"; its servers stay as they are, maps and ACLs are still updated");
  }
  worker->refusals.push_back(model::Refusal{object, WithoutPrefix(command), reply.text});
  return false;
}

void Reconciler::OnFirstPhase(int pid, plan::Plan plan, std::vector<cli::Command> sent,
                              std::vector<size_t> action_of,
                              std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid);
  if (worker == nullptr) return;
  if (absl::optional<std::string> error = TransportFailure(sent, results)) {
    Fail(worker, *std::move(error));
    return;
  }
  std::vector<cli::Command> second;
  std::vector<std::string> objects;
  for (size_t i = 0; i < sent.size(); ++i) {
    const plan::Action& action = plan.actions[action_of[i]];
    if (IsServerAction(action.kind)) {
      Judge(worker, action.object(), sent[i], results[i]);
      continue;
    }
    absl::StatusOr<int64_t> version =
        results[i].ok() ? parse::ParseNewVersion(*results[i]) : results[i].status();
    if (!version.ok()) {
      worker->refusals.push_back(model::Refusal{action.object(), WithoutPrefix(sent[i]),
                                                std::string(version.status().message())});
      continue;
    }
    absl::StatusOr<std::vector<cli::Command>> transaction =
        plan::TransactionCommands(pid, action, *version);
    if (!transaction.ok()) {
      worker->refusals.push_back(model::Refusal{action.object(), WithoutPrefix(sent[i]),
                                                std::string(transaction.status().message())});
      continue;
    }
    for (cli::Command& command : *transaction) {
      second.push_back(std::move(command));
      objects.push_back(action.object());
    }
  }
  if (second.empty()) {
    Observe(pid, /*verify=*/true);
    return;
  }
  std::vector<cli::Command> copy = second;
  client_->Submit(std::move(copy),
                  Guard([this, pid, objects = std::move(objects),
                         second = std::move(second)](auto replies) mutable {
                    OnSecondPhase(pid, std::move(objects), std::move(second), std::move(replies));
                  }),
                  options_.batch_timeout);
}

void Reconciler::OnSecondPhase(int pid, std::vector<std::string> objects,
                               std::vector<cli::Command> sent,
                               std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid);
  if (worker == nullptr) return;
  if (absl::optional<std::string> error = TransportFailure(sent, results)) {
    Fail(worker, *std::move(error));
    return;
  }
  for (size_t i = 0; i < sent.size(); ++i) Judge(worker, objects[i], sent[i], results[i]);
  Observe(pid, /*verify=*/true);
}

void Reconciler::Finish(WorkerState* worker, const plan::Plan& remaining) {
  model::WorkerSync& sync = worker->sync;
  worker->failures = 0;
  sync.managed = true;
  sync.error.clear();
  sync.stale = remaining.stale;
  for (const plan::Action& action : remaining.actions) {
    std::string reason = "still differs after the apply";
    for (const model::Refusal& r : worker->refusals) {
      if (r.object == action.object()) reason = absl::StrCat("refused: ", FirstLine(r.reply));
    }
    sync.stale.push_back(model::StaleObject{action.object(), action.field(), "", "", reason});
  }
  sync.refused = worker->refusals;
  sync.in_sync = remaining.actions.empty() && remaining.stale.empty();
  if (sync.in_sync) sync.applied_version = worker->running->version;
  worker->synced_seq = worker->running_seq;
  bool stale_servers = std::any_of(sync.stale.begin(), sync.stale.end(), [](const auto& s) {
    return absl::StartsWith(s.object, "backend/");
  });
  if (!stale_servers) sync.sessions_on_stale_servers = 0;
  EndReconcile(worker);
  // EndReconcile may have started another reconcile; the session count is independent of it.
  if (WorkerState* again = Find(worker->pid); again != nullptr && stale_servers) {
    RefreshSessions(again);
  }
}

void Reconciler::Fail(WorkerState* worker, std::string error) {
  base::LogDebug("reconcile worker ", worker->pid, ": ", error);
  worker->sync.error = std::move(error);
  worker->retry = true;
  uint64_t delay = std::min(kMaxRetryMs, kFirstRetryMs << std::min(worker->failures, 8));
  ++worker->failures;
  if (!worker->retry_timer) worker->retry_timer = std::make_unique<uv::Timer>(loop_);
  int pid = worker->pid;
  worker->retry_timer->Start(delay, 0, [this, pid] {
    WorkerState* w = Find(pid);
    if (w != nullptr && w->retry && !w->busy) {
      w->retry = false;
      Kick(w);
    }
  });
  EndReconcile(worker);
}

void Reconciler::EndReconcile(WorkerState* worker) {
  worker->busy = false;
  worker->running.reset();
  Notify();
  CheckWaiters();
  if (worker->dirty) Kick(worker);
}

void Reconciler::RefreshSessions(WorkerState* worker) {
  if (worker->sessions_busy) return;
  worker->sessions_busy = true;
  int pid = worker->pid;
  client_->Submit({cli::ForWorker(pid, "show sess")},
                  Guard([this, pid](auto results) { OnSessions(pid, std::move(results)); }),
                  options_.batch_timeout);
}

void Reconciler::OnSessions(int pid, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid);
  if (worker == nullptr) return;
  worker->sessions_busy = false;
  worker->sessions_at = wall_clock_();
  if (!results[0].ok()) return;
  absl::StatusOr<std::vector<parse::SessionRow>> rows = parse::ParseShowSess(*results[0]);
  if (!rows.ok()) return;
  std::vector<std::pair<std::string, std::string>> stale_servers;
  for (const model::StaleObject& s : worker->sync.stale) {
    std::string backend, server;
    if (SplitServerObject(s.object, &backend, &server)) stale_servers.emplace_back(backend, server);
  }
  int64_t count = 0;
  for (const parse::SessionRow& row : *rows) {
    if (row.is_cli()) continue;
    for (const auto& [backend, server] : stale_servers) {
      if (row.backend == backend && row.server == server) {
        ++count;
        break;
      }
    }
  }
  if (count != worker->sync.sessions_on_stale_servers) {
    worker->sync.sessions_on_stale_servers = count;
    Notify();
  }
}

void Reconciler::WaitForPush(uint64_t seq, absl::Duration timeout,
                             std::function<void(PushOutcome)> done) {
  AddWaiter(seq, /*only_pid=*/0, timeout, std::move(done));
}

void Reconciler::WaitForWorker(int pid, absl::Duration timeout,
                               std::function<void(bool synced)> done) {
  AddWaiter(desired_seq_, pid, timeout, [pid, done = std::move(done)](PushOutcome outcome) {
    for (const WorkerOutcome& worker : outcome.workers) {
      if (worker.pid == pid) {
        done(worker.result != PushResult::kPending);
        return;
      }
    }
    done(true);  // not a target: nothing to wait for
  });
}

bool Reconciler::HoldsLatest(int pid) const {
  auto it = workers_.find(pid);
  if (it == workers_.end() || !IsTarget(it->second->role)) return true;
  return it->second->synced_seq >= desired_seq_;
}

void Reconciler::AddWaiter(uint64_t seq, int only_pid, absl::Duration timeout,
                           std::function<void(PushOutcome)> done) {
  auto waiter = std::make_unique<Waiter>(loop_);
  waiter->seq = seq;
  waiter->only_pid = only_pid;
  waiter->done = std::move(done);
  Waiter* raw = waiter.get();
  waiter->deadline.Start(ToMs(timeout), 0, [this, raw] {
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [raw](const auto& w) { return w.get() == raw; });
    if (it == waiters_.end()) return;
    std::unique_ptr<Waiter> owned = std::move(*it);
    waiters_.erase(it);
    owned->done(OutcomeFor(owned->seq));
  });
  waiter->first_check.Start(0, 0, [this] { CheckWaiters(); });
  waiters_.push_back(std::move(waiter));
}

void Reconciler::CheckWaiters() {
  for (size_t i = 0; i < waiters_.size();) {
    uint64_t seq = waiters_[i]->seq;
    int only_pid = waiters_[i]->only_pid;
    bool complete = std::all_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
      const WorkerState& w = *entry.second;
      if (only_pid != 0 && w.pid != only_pid) return true;
      return !IsTarget(w.role) || w.synced_seq >= seq;
    });
    if (!complete) {
      ++i;
      continue;
    }
    std::unique_ptr<Waiter> owned = std::move(waiters_[i]);
    waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
    owned->done(OutcomeFor(seq));
  }
}

PushOutcome Reconciler::OutcomeFor(uint64_t seq) const {
  PushOutcome outcome;
  if (desired_) {
    outcome.version = desired_->version;
    outcome.generation = desired_->generation;
  }
  for (const model::WorkerReport& w : registry_->report().workers) {
    auto it = workers_.find(w.pid);
    if (it == workers_.end() || !IsTarget(it->second->role)) continue;
    const WorkerState& state = *it->second;
    WorkerOutcome o;
    o.pid = w.pid;
    o.role = state.role;
    if (state.synced_seq >= seq) {
      o.result = state.sync.in_sync ? PushResult::kApplied : PushResult::kPartial;
      o.refused = state.sync.refused;
      o.stale = state.sync.stale;
    }
    outcome.workers.push_back(std::move(o));
  }
  return outcome;
}

void Reconciler::Annotate(model::WorkersReport* report) const {
  for (model::WorkerReport& w : report->workers) {
    auto it = workers_.find(w.pid);
    if (it == workers_.end()) continue;
    w.sync = it->second->sync;
    w.sync.managed = desired_ != nullptr && IsTarget(it->second->role);
  }
}

void Reconciler::Notify() {
  for (const auto& listener : listeners_) listener();
}

}  // namespace hawk::reconcile
