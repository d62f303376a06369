// MasterClient's batch queue: Submit's checks, the order batches go out in (interactive before
// bulk, within the connection budget), the relay gate a batch must pass before it is written
// (relay_gate.h), batch deadlines and the delivery of results. Connections and their handshake
// are in client_connection.cc; a batch on a connection, and its replies, in client_replies.cc.

#include "agent/cli/client.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/base/log.h"
#include "agent/cli/client_internal.h"
#include "agent/cli/relay_gate.h"
#include "agent/cli/wire.h"

namespace hawk::cli {

MasterClient::MasterClient(uv_loop_t* loop, MasterClientOptions options)
    : loop_(loop),
      options_(std::move(options)),
      reconnect_timer_(loop),
      pacing_(ReconnectPacingOptions{options_.fast_retry_interval, options_.fast_retry_window,
                                     options_.max_retry_interval, options_.stable_after,
                                     options_.max_close_backoff}),
      relays_(options_.relay_lead, options_.relay_lead_per_command) {}

MasterClient::~MasterClient() = default;

absl::Duration MasterClient::LoopNow() const {
  return absl::Milliseconds(static_cast<int64_t>(uv_now(loop_)));
}

void MasterClient::SetDialect(Dialect dialect) {
  // A client talks to one kind of socket for its whole life: only the master's dialects switch
  // (its prompt, handshake and relay bookkeeping follow the socket). Anything else is a bug.
  if ((dialect == Dialect::kWorkerSocket) != worker_socket()) {
    base::LogError("master CLI: SetDialect between the master and a worker socket");
    std::abort();
  }
  options_.dialect = dialect;
}

bool MasterClient::worker_socket() const { return options_.dialect == Dialect::kWorkerSocket; }

MasterClientStats MasterClient::stats() const {
  MasterClientStats s = stats_;
  s.open_connections = static_cast<int>(connections_.size());
  s.held_connections =
      static_cast<int>(std::count_if(connections_.begin(), connections_.end(), [](const auto& c) {
        return c->batch != nullptr && c->batch->abandoned;
      }));
  s.slots_lost = slots_lost_;
  return s;
}

std::vector<HeldConnection> MasterClient::held() const {
  std::vector<HeldConnection> out;
  for (const auto& conn : connections_) {
    if (conn->batch == nullptr || !conn->batch->abandoned) continue;
    const Batch& batch = *conn->batch;
    HeldConnection held;
    if (conn->next_result < batch.commands.size()) {
      const Command& command = batch.commands[conn->next_result];
      held.command = MasterLine(command);
      held.pid = command.pid;
    }
    held.since = batch.abandoned_at;
    out.push_back(std::move(held));
  }
  return out;
}

int MasterClient::ConnectionBudget() const {
  return std::max(1, options_.max_connections - slots_lost_);
}

void MasterClient::SetSlotsLost(int slots) {
  slots = std::max(0, slots);
  if (slots == slots_lost_) return;
  if (slots > slots_lost_) {
    base::LogWarn("master CLI: the master keeps ", slots,
                  " slot(s) for sessions it closed on hawk (HAProxy 2.6 relaying to an exiting "
                  "worker; a master reload frees them): hawk now opens at most ",
                  std::max(1, options_.max_connections - slots), " connection(s)");
  }
  slots_lost_ = slots;
  // Over the budget: idle connections go first; busy ones close once their batch is done.
  int excess = static_cast<int>(connections_.size()) - ConnectionBudget();
  for (auto& conn : connections_) {
    if (excess <= 0) break;
    if (conn->state == Connection::State::kIdle) {
      DropConnection(conn.get(), false, /*master_answered=*/true);
      --excess;
    }
  }
  Dispatch();
}

void MasterClient::SetListedWorkers(absl::flat_hash_set<int> pids) {
  relays_.SetListed(std::move(pids));
}

void MasterClient::SetRelayWindow(int pid, absl::Duration remaining, std::string why) {
  relays_.SetWindow(pid, remaining, std::move(why), LoopNow());
}

bool MasterClient::RelayAllowed(int pid, std::string* why, size_t commands) const {
  return relays_.Allowed(pid, LoopNow(), why, commands);
}

bool MasterClient::HasRelays(const Batch& batch) const {
  return !worker_socket() && cli::HasRelays(batch.commands);  // a worker socket relays nothing
}

absl::Status MasterClient::CheckRelays(const Batch& batch) const {
  if (worker_socket()) return absl::OkStatus();  // the worker itself: no relay
  return relays_.Check(batch.commands, LoopNow());
}

void MasterClient::HoldBack(std::unique_ptr<Batch> batch, absl::Status why) {
  ++stats_.batches_held_back;
  Batch* raw = batch.get();
  raw->early_failure = std::move(why);
  // Delivered from the loop like any early failure (Dispatch may run inside Submit()).
  raw->timer.Start(absl::ZeroDuration(), [this, raw] { OnBatchTimeout(raw); });
  queue_.push_front(std::move(batch));
}

void MasterClient::Start() {
  if (started_) return;
  started_ = true;
  Dispatch();
}

void MasterClient::Submit(std::vector<Command> commands, BatchCallback done, absl::Duration timeout,
                          BatchPriority priority) {
  auto batch = std::make_unique<Batch>(loop_, std::move(commands), std::move(done));
  batch->bulk = priority == BatchPriority::kBulk;
  batch->results.assign(batch->commands.size(), absl::UnknownError("no reply yet"));
  for (size_t i = 0; i < batch->commands.size() && batch->early_failure.ok(); ++i) {
    absl::Status valid = ValidateCommand(batch->commands[i]);
    if (!valid.ok()) {
      batch->early_failure = absl::InvalidArgumentError(
          absl::StrCat("batch rejected before sending: command ", i + 1, ": ", valid.message()));
    }
  }
  if (batch->early_failure.ok() && batch->commands.empty()) {
    batch->early_failure = absl::InvalidArgumentError("empty batch");
  }
  if (batch->early_failure.ok() && queue_.size() >= options_.max_queued_batches) {
    batch->early_failure = absl::ResourceExhaustedError(
        absl::StrCat("master CLI queue is full (", queue_.size(), " batches waiting)"));
  }
  Batch* raw = batch.get();
  if (!batch->early_failure.ok()) {
    // Deliver from the loop, never from inside Submit().
    raw->timer.Start(absl::ZeroDuration(), [this, raw] { OnBatchTimeout(raw); });
    queue_.push_back(std::move(batch));
    return;
  }
  ++stats_.batches;
  stats_.commands += raw->commands.size();
  if (timeout <= absl::ZeroDuration()) timeout = options_.default_batch_timeout;
  raw->timer.Start(timeout, [this, raw] { OnBatchTimeout(raw); });
  queue_.push_back(std::move(batch));
  Dispatch();
}

void MasterClient::Dispatch() {
  if (!started_) return;
  // Interactive batches first, whatever their place in the queue; a bulk batch only while
  // another connection stays free for them (with one connection, bulk takes its turn).
  auto busy_with_bulk = [this] {
    return static_cast<int>(
        std::count_if(connections_.begin(), connections_.end(), [](const auto& c) {
          return c->state == Connection::State::kBusy && c->batch && c->batch->bulk;
        }));
  };
  int budget = ConnectionBudget();
  std::vector<std::pair<std::unique_ptr<Batch>, absl::Status>> held_back;
  for (bool bulk : {false, true}) {
    for (auto it = queue_.begin(); it != queue_.end();) {
      Batch& candidate = **it;
      if (!candidate.early_failure.ok() ||
          candidate.bulk != bulk) {  // failed ones wait for their timer
        ++it;
        continue;
      }
      // After the master closed a connection (a reload tells the old workers to stop) relays
      // wait in the queue until the master has listed its workers again.
      if (relays_.stale() && HasRelays(candidate)) {
        ++it;
        continue;
      }
      if (absl::Status relays = CheckRelays(candidate); !relays.ok()) {
        held_back.emplace_back(std::move(*it), std::move(relays));
        it = queue_.erase(it);
        continue;
      }
      if (bulk && budget > 1 && busy_with_bulk() >= budget - 1) break;
      auto idle = std::find_if(connections_.begin(), connections_.end(),
                               [](const auto& c) { return c->state == Connection::State::kIdle; });
      if (idle == connections_.end()) break;
      std::unique_ptr<Batch> batch = std::move(*it);
      it = queue_.erase(it);
      SendBatch(idle->get(), std::move(batch));
    }
  }
  for (auto& [batch, why] : held_back) HoldBack(std::move(batch), std::move(why));
  bool waiting = std::any_of(queue_.begin(), queue_.end(),
                             [](const auto& b) { return b->early_failure.ok(); });
  bool opening = std::any_of(connections_.begin(), connections_.end(),
                             [](const auto& c) { return c->opening(); });
  int count = static_cast<int>(connections_.size());
  // Keep one connection open at all times (a reload closes it: that is how hawk notices), and
  // open a second only while work is waiting.
  bool want = count == 0 || (waiting && !opening && count < budget);
  if (want && !reconnect_timer_.active()) OpenConnection();
}

void MasterClient::FinishBatch(std::unique_ptr<Batch> batch) {
  if (!batch) return;
  batch->timer.Stop();
  BatchCallback done = std::move(batch->done);
  std::vector<CommandResult> results = std::move(batch->results);
  batch.reset();
  if (done) done(std::move(results));
}

void MasterClient::OnBatchTimeout(Batch* batch) {
  if (!batch->early_failure.ok()) {
    auto it = std::find_if(queue_.begin(), queue_.end(),
                           [batch](const auto& b) { return b.get() == batch; });
    if (it == queue_.end()) return;
    std::unique_ptr<Batch> owned = std::move(*it);
    queue_.erase(it);
    owned->results.assign(owned->commands.size(), owned->early_failure);
    FinishBatch(std::move(owned));
    return;
  }
  if (Connection* conn = batch->connection) {
    if (batch->abandoned) return;
    // Closing the connection would not give the master's slot back while a relayed command is
    // unanswered (haproxy#3351): keep it, fail the batch now, and read (and drop) the late
    // replies of what was sent; the connection serves again once they are in.
    std::string pending = conn->next_result < batch->commands.size()
                              ? MasterLine(batch->commands[conn->next_result])
                              : "";
    base::LogWarn("master CLI: no reply to `", pending,
                  "` before the batch deadline; the connection is kept until the reply comes "
                  "(closing it would not free the master's slot)");
    ++stats_.connections_held_total;
    std::vector<CommandResult> results = batch->results;
    for (size_t i = conn->next_result; i < batch->commands.size(); ++i) {
      results[i] = absl::DeadlineExceededError(absl::StrCat(
          "`", MasterLine(batch->commands[i]), "`: ",
          i < batch->sent ? "no reply before the batch deadline (a stuck worker?); it may still run"
                          : "not sent: an earlier command of the batch got no reply before the "
                            "batch deadline"));
    }
    batch->abandoned = true;
    batch->abandoned_at_loop = LoopNow();
    batch->abandoned_at = absl::Now();
    BatchCallback done = std::move(batch->done);
    batch->done = nullptr;
    if (done) done(std::move(results));
    Dispatch();
    return;
  }
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [batch](const auto& b) { return b.get() == batch; });
  if (it == queue_.end()) return;
  std::unique_ptr<Batch> owned = std::move(*it);
  queue_.erase(it);
  absl::Status why = absl::DeadlineExceededError(
      absl::StrCat("master CLI unreachable until the batch deadline: ", last_error_.message()));
  owned->results.assign(owned->commands.size(), why);
  for (size_t i = 0; i < owned->commands.size(); ++i) {
    owned->results[i] = absl::DeadlineExceededError(
        absl::StrCat("`", MasterLine(owned->commands[i]), "`: ", why.message()));
  }
  FinishBatch(std::move(owned));
}

}  // namespace hawk::cli
