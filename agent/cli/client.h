#pragma once

// MasterClient: hawk's only path to HAProxy's master CLI. Asynchronous over libuv.
//
// Ownership and threading: owns its connections (uv::Stream) and timers; single loop thread.
// Callbacks run on the loop; a callback may Submit() more work but must not destroy the client.
// Destroying the client drops pending callbacks without calling them.
//
// Connections: persistent, in prompt mode (see framer.h), never more than
// Options::max_connections (2 by default: the master serves 10 connections in total and leaked
// slots have made it unreachable, haproxy#3351). One connection is kept open while the master is
// reachable, so that a reload — which closes every master connection — is noticed at once
// (OnConnectionLost). A batch's commands are pipelined on one connection; the master answers
// them in order.
//
// Reply attribution: every command's reply ends with a prompt. A master-side error
// (`Can't find the target PID…`, `Can't connect to the target CLI!`, `Permission denied!`) makes
// 2.8+ discard the commands it had buffered behind it and 2.6 close the connection; either way
// the commands sent after it get an error result (they may or may not have run) and the
// connection is closed, so that nothing it still sends can be taken for a later reply. A whole
// line's reply (kMasterWholeLines) is one prompt-framed block that splits into its commands'
// replies (line_replies.h); a block that ends early leaves the rest unanswered (they may or may not
// have run), one that holds more than its commands poisons the connection.
//
// The master's slots (haproxy#3351, and HAProxy 2.6 relaying to a worker that is exiting): a slot
// is only given back when the master ends the session, and a session whose relayed command has
// not been answered does not end because hawk closes its side. So:
//   - a batch whose deadline passes with a relayed command unanswered fails at once, but its
//     connection is kept and drained (its late replies read and dropped) instead of closed: it
//     stays one of hawk's connections, reported as held (held()), and serves again once drained;
//   - commands go only to workers the master listed last (SetListedWorkers) and within each
//     worker's relay window (SetRelayWindow); others fail unsent. After the master closed a
//     connection (a reload tells the old workers to stop), batches with relayed commands wait
//     in the queue until the next listing;
//   - when the master closes a connection right after relaying a command to a worker (the
//     command unanswered, or answered by a bare prompt: 2.6's reply when it cannot reach an
//     exiting worker, a session whose slot it then keeps for good), nothing more goes to that
//     worker until the registry has looked again (AddRelayClosedListener);
//   - every close by the master is followed by a reconnect backoff that grows while closes come
//     in a row, not only closes during the handshake;
//   - slots the master keeps for sessions it closed on hawk count against hawk's own
//     (SetSlotsLost): hawk then opens fewer connections, never fewer than one.

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/base/address.h"
#include "agent/base/callback_list.h"
#include "agent/cli/command.h"
#include "agent/cli/framer.h"
#include "agent/cli/reconnect_pacing.h"
#include "agent/cli/relay_gate.h"
#include "agent/cli/reply_attribution.h"
#include "agent/cli/wire.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"

namespace hawk::cli {

// One result per command (CommandResult, reply_attribution.h), in order: the reply text (which
// may be a worker-level error such as `Proxy is disabled.`: the caller classifies it), or a
// Status:
//   NotFound           the master has no such worker (`Can't find the target PID…`)
//   Unavailable        the master could not reach the worker, or the connection closed before
//                      the reply (a reload): the command may or may not have run
//   PermissionDenied   the master refused the level
//   NotFound           also: not sent, the worker is not in the master's last listing
//   Unavailable        also: not sent, the worker's relay window is closed (SetRelayWindow)
//   DeadlineExceeded   the batch timed out (its connection is kept until the replies come)
//   InvalidArgument    the batch was rejected before anything was sent
using BatchCallback = std::function<void(std::vector<CommandResult>)>;

enum class BatchPriority {
  kInteractive,  // a push's changes, worker polls: sent before any bulk batch waiting
  // Whole-state work (observing everything, seeding a new worker): never takes the last free
  // connection, so that a push is never queued behind it.
  kBulk,
};

struct MasterClientOptions {
  base::Address address;
  int max_connections = 2;
  absl::Duration default_batch_timeout = absl::Seconds(5);
  // Reconnect pacing after a lost connection. The master refuses connections while it
  // re-executes (up to 3.0 also while the new configuration is parsed); a short constant retry
  // catches it the moment it is back, then the delay grows so an absent master costs little.
  absl::Duration fast_retry_interval = absl::Milliseconds(5);
  absl::Duration fast_retry_window = absl::Seconds(3);
  absl::Duration max_retry_interval = absl::Milliseconds(250);
  // After the master closes an established connection the reconnect waits fast_retry_interval,
  // doubled for each close in a row of connections it closed within stable_after of their
  // handshake, up to max_close_backoff: a master that closes each connection once hawk sends on
  // it would otherwise be reconnected to, and resent to, hundreds of times a second. A reload
  // closes connections that had served a while: the next one comes back at once.
  absl::Duration stable_after = absl::Seconds(1);
  absl::Duration max_close_backoff = absl::Seconds(1);
  // A batch for a worker with a relay window (SetRelayWindow) is written only if it reaches the
  // worker before the window closes: at least relay_lead before it, plus relay_lead_per_command
  // for each of its commands (2.6's master relays one `@!` command in 0.2-0.5 ms).
  absl::Duration relay_lead = absl::Milliseconds(100);
  absl::Duration relay_lead_per_command = absl::Microseconds(500);
  // Connections beyond the first are closed after this long without work.
  absl::Duration extra_connection_idle = absl::Seconds(5);
  // A connection the master accepted but has not answered yet. The kernel accepts an 11th
  // connection and the master serves it, in arrival order, once one of its 10 slots frees
  // (its MASTER proxy has maxconn 10); a loaded machine can also delay the answer. So after
  // `handshake_report_after` hawk reports the master unreachable but keeps its place in the
  // queue, opens a second connection beside it (in case the master lost this one), and gives a
  // connection up (and connects again) only after `handshake_give_up_after`.
  absl::Duration handshake_report_after = absl::Seconds(2);
  absl::Duration handshake_give_up_after = absl::Seconds(30);
  size_t max_queued_batches = 4096;
  // How batches go out (wire.h). kMasterWholeLines (3.2+): runs of a batch's plain commands for
  // one worker go as `@@!<pid> c1; c2; …` lines (one worker CLI session per line instead of one
  // per command), each at most kMaxLineBytes and alone in flight on its connection (HAProxy may
  // swallow what follows a whole line sent before its replies came back); payload commands and
  // master commands go one by one. SetDialect switches between the master's two dialects at run
  // time (the app learns the master's version).
  // kWorkerSocket: `address` is a worker's own `stats socket` (level admin), not the master: its
  // prompt is `> `, commands go without their `@!<pid>` prefix, and every connection first asks
  // `show info` which worker it reached (worker_pid()). A connection stays with the process that
  // accepted it, so one answer per connection tells which worker every later command on it
  // reaches.
  Dialect dialect = Dialect::kMaster;
};

struct MasterClientStats {
  uint64_t batches = 0;
  uint64_t commands = 0;
  uint64_t lines = 0;        // lines written: commands, or whole lines of several
  uint64_t whole_lines = 0;  // of which `@@!<pid>` lines
  uint64_t connects = 0;
  uint64_t connect_failures = 0;
  uint64_t connections_lost = 0;  // closed by the master (reloads, restarts)
  // Of which right after a relayed command (see AddRelayClosedListener).
  uint64_t relay_closes = 0;
  // Batches failed unsent: the worker was not listed, or its relay window was closed.
  uint64_t batches_held_back = 0;
  // Batch deadlines that left a connection held (drained instead of closed).
  uint64_t connections_held_total = 0;
  int open_connections = 0;
  int max_open_connections = 0;
  int held_connections = 0;  // open connections waiting for a relayed reply past their deadline
  int slots_lost = 0;        // as last set by SetSlotsLost
};

// A connection hawk keeps because a command the master relayed on it has not been answered
// past its batch's deadline (closing it would not give the master's slot back).
struct HeldConnection {
  int pid = 0;          // the worker the unanswered command went to (0: the master itself)
  std::string command;  // that command's line, as the master reads it (MasterLine)
  absl::Time since;     // when its batch's deadline passed
};

class MasterClient {
 public:
  MasterClient(uv_loop_t* loop, MasterClientOptions options);
  ~MasterClient();
  MasterClient(const MasterClient&) = delete;
  MasterClient& operator=(const MasterClient&) = delete;

  // Starts connecting. Until Start() nothing touches the socket.
  void Start();
  // Queues `commands` to run in order on one connection. `done` always runs exactly once (unless
  // the client is destroyed first), never from inside Submit().
  void Submit(std::vector<Command> commands, BatchCallback done,
              absl::Duration timeout = absl::ZeroDuration(),
              BatchPriority priority = BatchPriority::kInteractive);

  // Runs `callback` after the master closed a connection that hawk did not close (a reload or a
  // restart), and after each failed connect while the master was previously reachable, until
  // the returned handle is destroyed.
  base::Subscription AddConnectionLostListener(std::function<void()> callback) {
    return on_lost_.Add(std::move(callback));
  }
  // Runs `callback` when a connection completes its handshake after the master was unreachable,
  // until the returned handle is destroyed.
  base::Subscription AddReachableListener(std::function<void()> callback) {
    return on_reachable_.Add(std::move(callback));
  }
  // Runs `callback` when a connect finds nothing listening on the master's socket (ECONNREFUSED
  // or ENOENT: the master is re-executing, or down), until the returned handle is destroyed.
  base::Subscription AddConnectRefusedListener(std::function<void()> callback) {
    return on_refused_.Add(std::move(callback));
  }

  // Runs `callback(pid)` when the master closed an established connection right after relaying
  // a command to worker `pid` (unanswered, or answered by nothing but a prompt), until the
  // returned handle is destroyed. Commands for `pid` then fail unsent until SetRelayWindow or
  // SetListedWorkers says otherwise.
  base::Subscription AddRelayClosedListener(std::function<void(int pid)> callback) {
    return on_relay_closed_.Add(std::move(callback));
  }

  // The workers the master's last `show proc` lists: a batch with a command for any other pid
  // fails unsent with NotFound. Until the first call every pid goes. Relay windows of pids no
  // longer listed are forgotten. After a close by the master, batches with relayed commands
  // wait for the next call.
  void SetListedWorkers(absl::flat_hash_set<int> pids);
  // Commands for `pid` must reach it within `remaining` from now (InfiniteDuration: always; zero
  // or less: never): a batch with one is written only early enough (relay_lead), else fails
  // unsent with Unavailable(`why`).
  void SetRelayWindow(int pid, absl::Duration remaining, std::string why = "");
  // Whether a batch of `commands` commands for `pid` would be written now; `*why` says why not.
  bool RelayAllowed(int pid, std::string* why = nullptr, size_t commands = 1) const;
  // Slots the master keeps for sessions it closed on hawk: hawk opens that many connections
  // fewer than max_connections, never fewer than one.
  void SetSlotsLost(int slots);
  // The connections kept for an unanswered relayed command past its deadline.
  std::vector<HeldConnection> held() const;
  // The most connections hawk opens now: max_connections less the slots lost, at least one.
  // The master re-executed (a reload) since the closes counted so far: they were the reload's,
  // not a master closing each connection hawk sends on, so the next close backs off as a first
  // one. Without this, reloads that come faster than stable_after would each wait up to
  // max_close_backoff for a connection (and a new worker that long for its seed).
  void ForgetCloseStreak() { pacing_.ForgetCloseStreak(); }
  int ConnectionBudget() const;
  int max_connections() const { return options_.max_connections; }

  // kWorkerSocket: the pid the open connection reaches (0 before one was confirmed). Batches for
  // any other worker must not be sent here.
  int worker_pid() const { return reachable_ ? worker_pid_ : 0; }
  // Closes every connection and connects again (the socket may lead to another worker now).
  void Reconnect();

  // See MasterClientOptions::dialect. Applies to batches sent from now on; a client keeps
  // talking to what it connects to (the master, or a worker's socket).
  void SetDialect(Dialect dialect);
  Dialect dialect() const { return options_.dialect; }

  // True while a connection is established (the master answered its handshake).
  bool reachable() const { return reachable_; }
  // Why the master is unreachable (OK while reachable).
  const absl::Status& last_error() const { return last_error_; }
  MasterClientStats stats() const;

 private:
  struct Batch;
  struct Connection;

  void Dispatch();
  void OpenConnection();
  void OnConnected(Connection* conn, absl::Status status);
  void OnHandshakeSlow(Connection* conn);
  // A reply during the handshake (the first prompt; on a worker socket, `show info`). False when
  // the connection was dropped.
  bool OnHandshakeReply(Connection* conn, const FramedReply& reply);
  void OnData(Connection* conn, absl::string_view bytes);
  void OnEnd(Connection* conn, absl::Status status);
  void SendBatch(Connection* conn, std::unique_ptr<Batch> batch);
  // Writes the batch's next segment (a run of pipelined commands, or one whole line).
  void SendSegment(Connection* conn);
  // Stores the reply for the connection's next command (or the replies of its next whole line).
  // After a master error with commands still behind it, or a whole-line reply that does not
  // match its commands, fails those and returns true: the connection must be closed.
  bool RecordReply(Connection* conn, std::string text);
  // Detaches the connection's batch; results not yet filled get `missing`. The caller finishes
  // it (runs the user callback) after its own bookkeeping, so callbacks see a consistent client.
  std::unique_ptr<Batch> TakeBatch(Connection* conn, const absl::Status& missing);
  // `master_answered`: hawk retires a connection the master was serving (after a master error,
  // or Reconnect): the master stays reachable, so a new connection is no reason to refresh.
  void DropConnection(Connection* conn, bool closed_by_peer, bool master_answered = false);
  void ScheduleReconnect();
  // Not OK when a command of the batch goes to a pid not listed or out of its relay window.
  absl::Status CheckRelays(const Batch& batch) const;
  // Whether the batch has a command the master relays to a worker.
  bool HasRelays(const Batch& batch) const;
  // A batch taken from the queue that must not be sent: failed from the loop with `why`.
  void HoldBack(std::unique_ptr<Batch> batch, absl::Status why);
  void OnBatchTimeout(Batch* batch);
  void ArmIdleTimer(Connection* conn);
  void FinishBatch(std::unique_ptr<Batch> batch);
  bool worker_socket() const;  // dialect kWorkerSocket
  // The loop's time (libuv's, whole milliseconds from an arbitrary origin).
  absl::Duration LoopNow() const;

  uv_loop_t* loop_;
  MasterClientOptions options_;
  bool started_ = false;
  bool reachable_ = false;
  absl::Status last_error_ = absl::UnavailableError("master CLI: not connected yet");
  std::vector<std::unique_ptr<Connection>> connections_;
  std::deque<std::unique_ptr<Batch>> queue_;
  uv::Timer reconnect_timer_;
  ReconnectPacing pacing_;
  base::CallbackList<> on_lost_;
  base::CallbackList<> on_reachable_;
  base::CallbackList<int> on_relay_closed_;
  base::CallbackList<> on_refused_;
  RelayGate relays_;  // the master's listing and the workers' relay windows
  int slots_lost_ = 0;
  MasterClientStats stats_;
  uint64_t next_batch_id_ = 1;
  int worker_pid_ = 0;
};

}  // namespace hawk::cli
