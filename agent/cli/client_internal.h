#pragma once

// The private state of a MasterClient's batches and connections, shared by the files that
// implement it (client.cc: the queue; client_connection.cc: connections and their handshake;
// client_replies.cc: a batch on a connection). Nothing outside agent/cli/client*.cc includes it.

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/cli/client.h"
#include "agent/cli/framer.h"
#include "agent/cli/wire.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"

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

}  // namespace hawk::cli
