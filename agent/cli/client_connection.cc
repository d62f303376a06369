// MasterClient's connections: opening one (at most the connection budget), the handshake
// (`prompt`, and on a worker's socket `show info` for the pid it reaches), slow handshakes,
// extra connections closed when idle, drops by hawk or by the master, and when to connect again
// (reconnect_pacing.h). What is sent on an established connection is in client_replies.cc.

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/cli/client.h"
#include "agent/cli/client_internal.h"
#include "agent/parse/show_info.h"

namespace hawk::cli {

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

bool MasterClient::OnHandshakeReply(Connection* conn, const FramedReply& reply) {
  if (conn->state == Connection::State::kHandshake && worker_socket()) {
    // A worker's own socket: which worker is it? (After a reload the path belongs to the new
    // worker, and a stale path may lead elsewhere entirely.)
    conn->state = Connection::State::kConfirming;
    conn->framer.Expect(0);
    if (absl::Status write = conn->stream->Write("show info\n"); !write.ok()) {
      last_error_ = write;
      DropConnection(conn, false);
      ScheduleReconnect();
      return false;
    }
    return true;
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
      return false;
    }
    worker_pid_ = info->pid;
  }
  conn->timer.Stop();
  conn->state = Connection::State::kIdle;
  conn->ready_at = LoopNow();
  last_error_ = absl::OkStatus();
  pacing_.OnReady();
  bool was_reachable = reachable_;
  reachable_ = true;
  base::LogDebug(worker_socket() ? "worker socket" : "master CLI", ": connection ready (",
                 connections_.size(), " open)",
                 worker_socket() ? absl::StrCat(", worker ", worker_pid_) : "");
  ArmIdleTimer(conn);  // an extra connection (a late answer to a slow handshake) closes idle
  if (!was_reachable) on_reachable_.Notify();
  return true;
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
    if (relays_.has_listing()) {
      // A reload (which tells the old workers to stop) closes every master connection: what was
      // queued for a worker from the listing before it is not sent; what comes next waits for
      // the next listing.
      relays_.MarkStale();
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
    // Every close by the master backs off, more while the master closes connections soon after
    // their handshake (reconnect_pacing.h).
    pacing_.OnPeerClose(LoopNow(), conn->ready_at);
    if (pacing_.close_streak() > 1) {
      base::LogDebug("master CLI: closed by the master ", pacing_.close_streak(),
                     " times in a row; reconnecting in ",
                     absl::FormatDuration(pacing_.retry_delay()));
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
  absl::Duration delay = pacing_.NextDelay(LoopNow());
  reconnect_timer_.Start(delay, [this] {
    reconnect_timer_.Stop();
    Dispatch();
  });
}

}  // namespace hawk::cli
