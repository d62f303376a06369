#pragma once

// GET /v1/watch: a chunked application/x-ndjson stream. One line per change of the per-worker
// report (`{"report":{…}}`, the same object as GET /v1/workers) and a heartbeat line
// (`{"heartbeat":"<RFC 3339>"}`) every `heartbeatMs` (default 15000) without changes. Ticking
// fields (uptimes, observedAt) do not count as changes. A reader that falls behind by more than
// the server's stream buffer is dropped, never waited for.
//
// Ownership and threading: owns the streams' Responders and the heartbeat timer; loop thread.

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/http/request.h"
#include "agent/http/server.h"
#include "agent/model/workers.h"
#include "agent/uv/timer.h"

namespace hawk::api {

class WatchHub {
 public:
  WatchHub(uv_loop_t* loop, std::function<model::WorkersReport()> snapshot,
           std::function<absl::Time()> wall_clock);
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  void Handle(const http::Request& request, http::Responder responder);
  // Something may have changed: sends the report to every stream whose last line differs.
  void OnChange();
  size_t streams() const { return streams_.size(); }

 private:
  struct Stream {
    http::Responder responder;
    std::string last_key;
    absl::Duration heartbeat;
    absl::Time last_write;
  };
  void Send(Stream* stream, const std::string& line);
  void Sweep();
  void OnTick();

  std::function<model::WorkersReport()> snapshot_;
  std::function<absl::Time()> wall_clock_;
  std::vector<std::unique_ptr<Stream>> streams_;
  uv::Timer tick_;
};

// The report without its ticking fields: what "changed" means for /v1/watch.
std::string ReportChangeKey(const model::WorkersReport& report);

}  // namespace hawk::api
