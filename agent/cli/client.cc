#include "agent/cli/client.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/base/log.h"
#include "agent/cli/reply_attribution.h"
#include "agent/cli/wire.h"
#include "agent/parse/reply.h"
#include "agent/parse/show_info.h"

namespace hawk::cli {

struct MasterClient::Batch {
  Batch(uv_loop_t* loop, std::vector<Command> cmds, BatchCallback cb)
      : commands(std::move(cmds)), done(std::move(cb)), timer(loop) {}

  std::vector<Command> commands;
  bool bulk = false;  // BatchPriority::kBulk
  std::vector<Segment> segments;
  size_t next_segment = 0;
  std::vector<CommandResult> results;
  BatchCallback done;
  uv::Timer timer;                   // the deadline, or a zero delay for an early failure
  absl::Status early_failure;        // set when the batch fails before anything is sent
  Connection* connection = nullptr;  // while in flight
  size_t sent = 0;                   // commands [0, sent) have been written
  // The deadline passed with replies outstanding: `done` has run, the connection drains the
  // replies of what was sent and sends nothing more of this batch.
  bool abandoned = false;
  absl::Duration abandoned_at_loop;  // loop time
  absl::Time abandoned_at;           // the same moment on the wall clock, for the report
};

struct MasterClient::Connection {
  enum class State {
    kConnecting,  // connect() in progress
    kHandshake,   // sent `prompt`, waiting for the first prompt
    kConfirming,  // worker socket: sent `show info`, waiting for the pid it answers for
    kIdle,        // established, no batch
    kBusy,        // a batch is in flight
    kClosing,     // closed by hawk or the peer; waiting for the handle's close callback
  };

  Connection(uv_loop_t* loop, base::Address::Kind kind, PromptKind prompt)
      : stream(std::make_unique<uv::Stream>(loop, kind)),
        framer(64 * 1024 * 1024, prompt),
        timer(loop) {}

  std::unique_ptr<uv::Stream> stream;
  PromptFramer framer;
  State state = State::kConnecting;
  std::unique_ptr<Batch> batch;
  size_t next_result = 0;
  bool retire = false;  // close once the batch in flight is done (Reconnect)
  uv::Timer timer;      // handshake deadline, then the idle timer of an extra connection
  // The last reply read here answered a command relayed to this worker (0: a master command),
  // and was a bare prompt: what 2.6 answers when it cannot reach an exiting worker, just before
  // it closes the connection.
  int last_relay_pid = 0;
  bool last_reply_bare = false;
  absl::Duration ready_at;  // loop time the handshake completed

  bool established() const { return state == State::kIdle || state == State::kBusy; }
  bool opening() const {
    return state == State::kConnecting || state == State::kHandshake || state == State::kConfirming;
  }
};

MasterClient::MasterClient(uv_loop_t* loop, MasterClientOptions options)
    : loop_(loop),
      options_(std::move(options)),
      reconnect_timer_(loop),
      retry_delay_(options_.fast_retry_interval) {}

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
  have_listing_ = true;
  listing_stale_ = false;
  listed_ = std::move(pids);
  for (auto it = relay_windows_.begin(); it != relay_windows_.end();) {
    if (!listed_.contains(it->first)) {
      relay_windows_.erase(it++);
    } else {
      ++it;
    }
  }
}

void MasterClient::SetRelayWindow(int pid, absl::Duration remaining, std::string why) {
  if (remaining == absl::InfiniteDuration()) {
    relay_windows_.erase(pid);
    return;
  }
  absl::Duration until =
      remaining <= absl::ZeroDuration() ? absl::ZeroDuration() : LoopNow() + remaining;
  relay_windows_[pid] = RelayWindow{until, std::move(why)};
}

bool MasterClient::RelayAllowed(int pid, std::string* why, size_t commands) const {
  if (have_listing_ && !listed_.contains(pid)) {
    if (why != nullptr) {
      *why = absl::StrCat("worker ", pid, " is not listed by the master's last `show proc`");
    }
    return false;
  }
  auto it = relay_windows_.find(pid);
  if (it == relay_windows_.end()) return true;
  absl::Duration lead =
      options_.relay_lead + options_.relay_lead_per_command * static_cast<int64_t>(commands);
  if (LoopNow() + lead < it->second.until) return true;
  if (why != nullptr) *why = absl::StrCat("worker ", pid, ": ", it->second.why);
  return false;
}

bool MasterClient::HasRelays(const Batch& batch) const {
  if (worker_socket()) return false;
  return std::any_of(batch.commands.begin(), batch.commands.end(),
                     [](const Command& command) { return command.pid != 0; });
}

absl::Status MasterClient::CheckRelays(const Batch& batch) const {
  if (worker_socket()) return absl::OkStatus();  // the worker itself: no relay
  for (const Command& command : batch.commands) {
    int pid = command.pid;
    if (pid == 0) continue;
    std::string why;
    if (RelayAllowed(pid, &why, batch.commands.size())) continue;
    std::string message = absl::StrCat("not sent: ", why);
    if (have_listing_ && !listed_.contains(pid)) return absl::NotFoundError(message);
    return absl::UnavailableError(message);
  }
  return absl::OkStatus();
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
      if (listing_stale_ && HasRelays(candidate)) {
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

void MasterClient::OpenConnection() {
  if (static_cast<int>(connections_.size()) >= ConnectionBudget()) return;
  auto conn = std::make_unique<Connection>(
      loop_, options_.address.kind, worker_socket() ? PromptKind::kWorker : PromptKind::kMaster);
  Connection* raw = conn.get();
  connections_.push_back(std::move(conn));
  stats_.max_open_connections =
      std::max(stats_.max_open_connections, static_cast<int>(connections_.size()));
  ++stats_.connects;
  absl::Status status = raw->stream->Connect(
      options_.address, [this, raw](absl::Status result) { OnConnected(raw, std::move(result)); });
  if (!status.ok()) {
    last_error_ = status;
    DropConnection(raw, /*closed_by_peer=*/false);
    ScheduleReconnect();
  }
}

void MasterClient::OnConnected(Connection* conn, absl::Status status) {
  if (!status.ok()) {
    ++stats_.connect_failures;
    bool refused = absl::StrContains(status.message(), "(ECONNREFUSED)") ||
                   absl::StrContains(status.message(), "(ENOENT)");
    last_error_ = absl::UnavailableError(absl::StrCat("master CLI ", status.message()));
    DropConnection(conn, /*closed_by_peer=*/false);
    ScheduleReconnect();
    if (refused) on_refused_.Notify();
    return;
  }
  conn->state = Connection::State::kHandshake;
  absl::Status read =
      conn->stream->StartReading([this, conn](absl::string_view bytes) { OnData(conn, bytes); },
                                 [this, conn](absl::Status end) { OnEnd(conn, std::move(end)); });
  conn->framer.Expect(0);
  absl::Status write = read.ok() ? conn->stream->Write("prompt\n") : read;
  if (!write.ok()) {
    last_error_ = write;
    DropConnection(conn, false);
    ScheduleReconnect();
    return;
  }
  conn->timer.Start(options_.handshake_report_after, [this, conn] { OnHandshakeSlow(conn); });
}

void MasterClient::OnHandshakeSlow(Connection* conn) {
  // Closing here would only move hawk to the back of the master's accept queue: keep waiting.
  // The master may also have lost this one connection (a wedged session), so try a second one
  // beside it; whichever answers first serves, and the cap still holds.
  last_error_ = absl::UnavailableError(
      absl::StrCat("master CLI accepted the connection but has not answered for ",
                   absl::FormatDuration(options_.handshake_report_after),
                   " (all 10 master CLI slots busy, or the master is stalled); still waiting"));
  base::LogWarn(last_error_.message());
  bool another_opening =
      std::any_of(connections_.begin(), connections_.end(),
                  [conn](const auto& c) { return c.get() != conn && c->opening(); });
  if (!another_opening) OpenConnection();  // no-op at the connection cap
  absl::Duration rest = options_.handshake_give_up_after - options_.handshake_report_after;
  conn->timer.Start(rest, [this, conn] {
    last_error_ = absl::UnavailableError(absl::StrCat(
        "master CLI accepted the connection but did not answer within ",
        absl::FormatDuration(options_.handshake_give_up_after),
        " (all 10 master CLI slots busy, or the master is stalled); connecting again"));
    base::LogWarn(last_error_.message());
    DropConnection(conn, false);
    ScheduleReconnect();
  });
}

void MasterClient::SendBatch(Connection* conn, std::unique_ptr<Batch> batch) {
  batch->segments = Segments(batch->commands, options_.dialect);
  batch->next_segment = 0;
  conn->state = Connection::State::kBusy;
  conn->next_result = 0;
  conn->timer.Stop();
  batch->connection = conn;
  conn->batch = std::move(batch);
  SendSegment(conn);
}

void MasterClient::SendSegment(Connection* conn) {
  Batch& batch = *conn->batch;
  std::string bytes;
  // Pipelined runs go out together up to the next whole line, which waits for its turn.
  while (batch.next_segment < batch.segments.size()) {
    const Segment& segment = batch.segments[batch.next_segment];
    if (segment.whole) {
      if (!bytes.empty()) break;  // after the pipelined commands before it are answered
      bytes = SegmentBytes(batch.commands, segment, options_.dialect);
      conn->framer.Expect(0);
      ++stats_.lines;
      ++stats_.whole_lines;
      ++batch.next_segment;
      batch.sent = segment.end;
      break;
    }
    absl::StrAppend(&bytes, SegmentBytes(batch.commands, segment, options_.dialect));
    for (size_t i = segment.begin; i < segment.end; ++i) {
      conn->framer.Expect(batch.commands[i].payload_lines());
      ++stats_.lines;
    }
    ++batch.next_segment;
    batch.sent = segment.end;
  }
  absl::Status status = conn->stream->Write(std::move(bytes));
  if (!status.ok()) {
    std::unique_ptr<Batch> failed =
        TakeBatch(conn, absl::UnavailableError(absl::StrCat("master CLI ", status.message())));
    DropConnection(conn, false);
    ScheduleReconnect();
    FinishBatch(std::move(failed));
  }
}

bool MasterClient::RecordReply(Connection* conn, std::string text) {
  Batch& batch = *conn->batch;
  // A whole line goes to the worker of its first command, like a command of its own.
  conn->last_relay_pid = worker_socket() ? 0 : batch.commands[conn->next_result].pid;
  conn->last_reply_bare = text.empty();
  return AttributeReply(batch.commands, batch.segments, std::move(text), &conn->next_result,
                        &batch.results);
}

void MasterClient::OnData(Connection* conn, absl::string_view bytes) {
  std::vector<FramedReply> replies;
  absl::Status framing = conn->framer.Feed(bytes, &replies);
  std::unique_ptr<Batch> finished;
  bool poisoned = false;
  for (FramedReply& reply : replies) {
    if (conn->state == Connection::State::kHandshake && worker_socket()) {
      // A worker's own socket: which worker is it? (After a reload the path belongs to the new
      // worker, and a stale path may lead elsewhere entirely.)
      conn->state = Connection::State::kConfirming;
      conn->framer.Expect(0);
      if (absl::Status write = conn->stream->Write("show info\n"); !write.ok()) {
        last_error_ = write;
        DropConnection(conn, false);
        ScheduleReconnect();
        return;
      }
      continue;
    }
    if (conn->state == Connection::State::kConfirming) {
      absl::StatusOr<parse::ShowInfo> info = parse::ParseShowInfo(reply.text);
      if (!info.ok() || info->pid <= 0) {
        last_error_ = absl::UnavailableError(absl::StrCat(
            "worker socket ", options_.address.ToString(), ": `show info` did not name a pid (",
            info.ok() ? "no Pid:" : info.status().message(), ")"));
        base::LogWarn(last_error_.message());
        DropConnection(conn, false);
        ScheduleReconnect();
        return;
      }
      worker_pid_ = info->pid;
    }
    if (conn->state == Connection::State::kHandshake ||
        conn->state == Connection::State::kConfirming) {
      conn->timer.Stop();
      conn->state = Connection::State::kIdle;
      conn->ready_at = LoopNow();
      last_error_ = absl::OkStatus();
      retry_delay_ = options_.fast_retry_interval;
      bool was_reachable = reachable_;
      reachable_ = true;
      base::LogDebug(worker_socket() ? "worker socket" : "master CLI", ": connection ready (",
                     connections_.size(), " open)",
                     worker_socket() ? absl::StrCat(", worker ", worker_pid_) : "");
      ArmIdleTimer(conn);  // an extra connection (a late answer to a slow handshake) closes idle
      if (!was_reachable) on_reachable_.Notify();
      continue;
    }
    if (conn->state != Connection::State::kBusy || !conn->batch) continue;
    poisoned = RecordReply(conn, std::move(reply.text));
    if (conn->batch->abandoned && !poisoned && conn->next_result >= conn->batch->sent) {
      // Every reply of what was sent has come: the connection serves again.
      base::LogInfo("master CLI: the held connection got its late replies after ",
                    absl::FormatDuration(LoopNow() - conn->batch->abandoned_at_loop),
                    "; it serves again");
      finished = std::move(conn->batch);
      finished->connection = nullptr;
      conn->state = Connection::State::kIdle;
      break;
    }
    if (conn->next_result == conn->batch->commands.size()) {
      finished = std::move(conn->batch);
      finished->connection = nullptr;
      conn->state = Connection::State::kIdle;
      break;
    }
    if (poisoned) break;
    Batch& batch = *conn->batch;
    if (!batch.abandoned && batch.next_segment < batch.segments.size() &&
        conn->next_result == batch.segments[batch.next_segment].begin) {
      SendSegment(conn);        // everything sent is answered: the next segment's turn
      if (!conn->batch) break;  // the write failed; the batch was finished there
    }
  }
  if (!framing.ok() || poisoned) {
    // A poisoned connection may still send replies for commands the master had not discarded:
    // close it so that nothing it sends is read as a later command's reply.
    if (!framing.ok()) {
      base::LogWarn("master CLI: closing a connection after a framing error: ", framing.message());
    }
    if (conn->batch) finished = TakeBatch(conn, absl::UnavailableError(framing.message()));
    DropConnection(conn, false, /*master_answered=*/framing.ok());
  } else if (finished && conn->retire) {
    DropConnection(conn, false, /*master_answered=*/true);
  } else if (finished) {
    ArmIdleTimer(conn);
  }
  if (finished) FinishBatch(std::move(finished));
  Dispatch();
}

void MasterClient::OnEnd(Connection* conn, absl::Status status) {
  // The master closed the connection: a reload, a restart, or 2.6 after a master error.
  absl::optional<FramedReply> last = conn->framer.FinishAtEof();
  if (last && conn->batch && conn->next_result < conn->batch->commands.size()) {
    bool complete = conn->batch->commands[conn->next_result].closes_connection ||
                    parse::ClassifyMasterError(last->text).has_value();
    if (complete) RecordReply(conn, std::move(last->text));
  }
  bool was_established = conn->established();
  // A command relayed to a worker and unanswered, or answered by a bare prompt, when the master
  // closed: 2.6's way of failing to reach a worker that is exiting (and of keeping the slot).
  int relay_pid = 0;
  if (was_established && !worker_socket()) {
    if (conn->batch && conn->next_result < conn->batch->sent &&
        !conn->batch->commands[conn->next_result].closes_connection) {
      relay_pid = conn->batch->commands[conn->next_result].pid;
    } else if (conn->last_reply_bare) {
      relay_pid = conn->last_relay_pid;
    }
  }
  std::string why = status.ok() ? "the master closed the connection"
                                : absl::StrCat("the connection failed: ", status.message());
  std::unique_ptr<Batch> finished =
      TakeBatch(conn, absl::UnavailableError(absl::StrCat(
                          "no reply: ", why, " (a reload?); it may or may not have run")));
  last_error_ = absl::UnavailableError(absl::StrCat("master CLI: ", why));
  base::LogDebug(last_error_.message(),
                 relay_pid != 0 ? absl::StrCat(" right after relaying to worker ", relay_pid) : "");
  DropConnection(conn, /*closed_by_peer=*/was_established);
  if (relay_pid != 0) {
    ++stats_.relay_closes;
    // Nothing more for it until the registry has looked (a reload closes connections too).
    SetRelayWindow(relay_pid, absl::ZeroDuration(),
                   "the master closed hawk's connection right after relaying a command to it "
                   "(a reload, or a worker that is exiting); held back until the master lists "
                   "its workers again");
    on_relay_closed_.Notify(relay_pid);
  }
  if (!was_established) {
    // Accepted, then closed before the handshake finished (a master dropping sessions, or going
    // away): a failed connect, retried with backoff and never at once (a tight connect loop).
    ++stats_.connect_failures;
    ScheduleReconnect();
  }
  FinishBatch(std::move(finished));
}

std::unique_ptr<MasterClient::Batch> MasterClient::TakeBatch(Connection* conn,
                                                             const absl::Status& missing) {
  std::unique_ptr<Batch> batch = std::move(conn->batch);
  if (!batch) return nullptr;
  for (size_t i = conn->next_result; i < batch->commands.size(); ++i) {
    batch->results[i] =
        absl::Status(missing.code(),
                     absl::StrCat("`", MasterLine(batch->commands[i]), "`: ", missing.message()));
  }
  conn->next_result = batch->commands.size();
  batch->connection = nullptr;
  return batch;
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

void MasterClient::ArmIdleTimer(Connection* conn) {
  int established = static_cast<int>(std::count_if(connections_.begin(), connections_.end(),
                                                   [](const auto& c) { return c->established(); }));
  if (established <= 1) return;
  conn->timer.Start(options_.extra_connection_idle, [this, conn] {
    int live = static_cast<int>(std::count_if(connections_.begin(), connections_.end(),
                                              [](const auto& c) { return c->established(); }));
    if (conn->state == Connection::State::kIdle && live > 1) DropConnection(conn, false);
  });
}

void MasterClient::DropConnection(Connection* conn, bool closed_by_peer, bool master_answered) {
  if (conn->state == Connection::State::kClosing) return;
  conn->state = Connection::State::kClosing;
  conn->timer.Stop();
  conn->stream->Close([this, conn] {
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [conn](const auto& c) { return c.get() == conn; });
    if (it != connections_.end()) connections_.erase(it);
    Dispatch();
  });
  bool any_established = std::any_of(connections_.begin(), connections_.end(),
                                     [](const auto& c) { return c->established(); });
  // A worker socket's next connection may reach another worker: its pid is unknown until then.
  if (!any_established && !(master_answered && !worker_socket())) reachable_ = false;
  if (closed_by_peer) {
    ++stats_.connections_lost;
    if (have_listing_) {
      // A reload (which tells the old workers to stop) closes every master connection: what was
      // queued for a worker from the listing before it is not sent; what comes next waits for
      // the next listing.
      listing_stale_ = true;
      std::vector<std::unique_ptr<Batch>> stale;
      for (auto it = queue_.begin(); it != queue_.end();) {
        if ((*it)->early_failure.ok() && HasRelays(**it)) {
          stale.push_back(std::move(*it));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      for (auto& batch : stale) {
        HoldBack(std::move(batch),
                 absl::UnavailableError(
                     "not sent: the master closed a connection (a reload?) before it went out; "
                     "it goes again once the master has listed its workers"));
      }
    }
    absl::Duration now = LoopNow();
    lost_at_ = now;
    // Every close by the master backs off, more while the master closes connections soon after
    // their handshake: one that closes each connection once hawk sends on it must not be
    // reconnected to (and resent to) at once. Closes within the same millisecond (a reload
    // closing both connections) count once.
    if (now - conn->ready_at >= options_.stable_after) close_streak_ = 0;
    if (close_streak_ == 0 || now != last_peer_close_) ++close_streak_;
    last_peer_close_ = now;
    absl::Duration backoff = options_.fast_retry_interval;
    for (int i = 1; i < close_streak_ && backoff < options_.max_close_backoff; ++i) backoff *= 2;
    retry_delay_ = std::min(backoff, options_.max_close_backoff);
    if (close_streak_ > 1) {
      base::LogDebug("master CLI: closed by the master ", close_streak_,
                     " times in a row; reconnecting in ", absl::FormatDuration(retry_delay_));
    }
    ScheduleReconnect();
    on_lost_.Notify();
  }
}

void MasterClient::Reconnect() {
  worker_pid_ = 0;
  for (auto& conn : connections_) {
    if (conn->state == Connection::State::kBusy) {
      conn->retire = true;  // its batch finishes first
    } else {
      DropConnection(conn.get(), false);
    }
  }
  Dispatch();
}

void MasterClient::ScheduleReconnect() {
  if (reconnect_timer_.active()) return;
  absl::Duration delay = retry_delay_;
  if (LoopNow() - lost_at_ > options_.fast_retry_window) {
    retry_delay_ = std::min(retry_delay_ * 2, options_.max_retry_interval);
  }
  reconnect_timer_.Start(delay, [this] {
    reconnect_timer_.Stop();
    Dispatch();
  });
}

}  // namespace hawk::cli
