// MasterClient's batch on a connection: writes its segments (wire.h), frames the replies
// (framer.h) and attributes them to its commands (reply_attribution.h), drains a held connection
// past its deadline, and fails what the master leaves unanswered when it closes the connection.

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/cli/client.h"
#include "agent/cli/client_internal.h"
#include "agent/cli/reply_attribution.h"
#include "agent/cli/wire.h"
#include "agent/parse/reply.h"

namespace hawk::cli {

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
    if (conn->state == Connection::State::kHandshake ||
        conn->state == Connection::State::kConfirming) {
      if (!OnHandshakeReply(conn, reply)) return;  // dropped
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

}  // namespace hawk::cli
