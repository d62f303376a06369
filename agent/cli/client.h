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
// line's reply (whole_lines) is one prompt-framed block that splits into its commands' replies
// (line_replies.h); a block that ends early leaves the rest unanswered (they may or may not have
// run), one that holds more than its commands poisons the connection.

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/base/address.h"
#include "agent/base/callback_list.h"
#include "agent/cli/command.h"
#include "agent/cli/framer.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"

namespace hawk::cli {

// One result per command, in order: the reply text (which may be a worker-level error such as
// `Proxy is disabled.`: the caller classifies it), or a Status:
//   NotFound           the master has no such worker (`Can't find the target PID…`)
//   Unavailable        the master could not reach the worker, or the connection closed before
//                      the reply (a reload): the command may or may not have run
//   PermissionDenied   the master refused the level
//   DeadlineExceeded   the batch timed out
//   InvalidArgument    the batch was rejected before anything was sent
using CommandResult = absl::StatusOr<std::string>;
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
  // 3.2+: runs of a batch's plain commands for one worker go as whole lines, `@@!<pid> c1; c2;
  // …` (one worker CLI session per line instead of one per command), each at most kMaxLineBytes
  // and alone in flight on its connection (HAProxy may swallow what follows a whole line sent
  // before its replies came back). Payload commands and master commands go one by one as before.
  // SetWholeLines changes it at run time (the registry learns the master's version).
  bool whole_lines = false;
  // `address` is a worker's own `stats socket` (level admin), not the master: its prompt is
  // `> `, commands go without their `@!<pid>` prefix, and every connection first asks `show info`
  // which worker it reached (worker_pid()). A connection stays with the process that accepted it,
  // so one answer per connection tells which worker every later command on it reaches.
  bool worker_socket = false;
};

struct MasterClientStats {
  uint64_t batches = 0;
  uint64_t commands = 0;
  uint64_t lines = 0;        // lines written: commands, or whole lines of several
  uint64_t whole_lines = 0;  // of which `@@!<pid>` lines
  uint64_t connects = 0;
  uint64_t connect_failures = 0;
  uint64_t connections_lost = 0;  // closed by the master (reloads, restarts)
  int open_connections = 0;
  int max_open_connections = 0;
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

  // worker_socket: the pid the open connection reaches (0 before one was confirmed). Batches for
  // any other worker must not be sent here.
  int worker_pid() const { return reachable_ ? worker_pid_ : 0; }
  // Closes every connection and connects again (the socket may lead to another worker now).
  void Reconnect();

  // See MasterClientOptions::whole_lines. Applies to batches sent from now on.
  void SetWholeLines(bool enabled) { options_.whole_lines = enabled; }
  bool whole_lines() const { return options_.whole_lines; }

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
  void OnData(Connection* conn, absl::string_view bytes);
  void OnEnd(Connection* conn, absl::Status status);
  void SendBatch(Connection* conn, std::unique_ptr<Batch> batch);
  // Writes the batch's next segment (a run of pipelined commands, or one whole line).
  void SendSegment(Connection* conn);
  // Stores the reply for the connection's next command (or the replies of its next whole line).
  // After a master error with commands still behind it, or a whole-line reply that does not
  // match its commands, fails those and returns true: the connection must be closed.
  bool RecordReply(Connection* conn, std::string text);
  // The replies of commands [next_result, end), sent as one `@@!<pid>` line.
  bool RecordLineReplies(Connection* conn, size_t end, int pid, std::string text);
  // Detaches the connection's batch; results not yet filled get `missing`. The caller finishes
  // it (runs the user callback) after its own bookkeeping, so callbacks see a consistent client.
  std::unique_ptr<Batch> TakeBatch(Connection* conn, const absl::Status& missing);
  // `master_answered`: hawk retires a connection the master was serving (after a master error,
  // or Reconnect): the master stays reachable, so a new connection is no reason to refresh.
  void DropConnection(Connection* conn, bool closed_by_peer, bool master_answered = false);
  void ScheduleReconnect();
  void OnBatchTimeout(Batch* batch);
  void ArmIdleTimer(Connection* conn);
  void FinishBatch(std::unique_ptr<Batch> batch);
  uint64_t NowMs() const;

  uv_loop_t* loop_;
  MasterClientOptions options_;
  bool started_ = false;
  bool reachable_ = false;
  absl::Status last_error_ = absl::UnavailableError("master CLI: not connected yet");
  std::vector<std::unique_ptr<Connection>> connections_;
  std::deque<std::unique_ptr<Batch>> queue_;
  uv::Timer reconnect_timer_;
  uint64_t lost_at_ms_ = 0;  // when the master was last lost (for the retry pacing)
  absl::Duration retry_delay_;
  base::CallbackList<> on_lost_;
  base::CallbackList<> on_reachable_;
  MasterClientStats stats_;
  uint64_t next_batch_id_ = 1;
  int worker_pid_ = 0;
};

}  // namespace hawk::cli
