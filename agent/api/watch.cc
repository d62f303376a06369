#include "agent/api/watch.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"
#include "agent/http/response.h"
#include "agent/model/workers_json.h"

namespace hawk::api {
namespace {
constexpr int64_t kDefaultHeartbeatMs = 15000;
constexpr absl::Duration kTick = absl::Milliseconds(100);
}  // namespace

std::string ReportChangeKey(const model::WorkersReport& report) {
  model::WorkersReport stable = report;
  stable.observed_at = absl::InfinitePast();
  stable.master.uptime_seconds = 0;
  for (model::WorkerReport& w : stable.workers) w.uptime_seconds = 0;
  // Connections open and close with every batch: a change there is traffic, not news.
  stable.master_cli.connections = 0;
  return model::WorkersReportToJson(stable);
}

WatchHub::WatchHub(uv_loop_t* loop, std::function<model::WorkersReport()> snapshot,
                   std::function<absl::Time()> wall_clock)
    : snapshot_(std::move(snapshot)), wall_clock_(std::move(wall_clock)), tick_(loop) {}

WatchHub::~WatchHub() {
  for (auto& s : streams_) s->responder.EndStream();
}

void WatchHub::Handle(const http::Request& request, http::Responder responder) {
  int64_t heartbeat_ms = kDefaultHeartbeatMs;
  if (absl::optional<std::string> text = request.QueryParam("heartbeatMs")) {
    if (!absl::SimpleAtoi(*text, &heartbeat_ms) || heartbeat_ms < 100 || heartbeat_ms > 3600000) {
      responder.Send(http::ErrorFromStatus(base::FieldError(
          "heartbeatMs", absl::StrCat("must be an integer in 100..3600000, got \"", *text, "\""))));
      return;
    }
  }
  if (!responder.StartStream(200, "application/x-ndjson")) return;
  auto stream = std::make_unique<Stream>();
  stream->responder = responder;
  stream->heartbeat = absl::Milliseconds(heartbeat_ms);
  Stream* raw = stream.get();
  streams_.push_back(std::move(stream));
  // The current report first, so a watcher needs no separate GET.
  model::WorkersReport report = snapshot_();
  raw->last_key = ReportChangeKey(report);
  Send(raw, absl::StrCat("{\"report\":", model::WorkersReportToJson(report), "}\n"));
  if (!tick_.active()) tick_.StartRepeating(kTick, kTick, [this] { OnTick(); });
}

void WatchHub::Send(Stream* stream, const std::string& line) {
  stream->last_write = wall_clock_();
  if (!stream->responder.WriteChunk(line)) stream->responder = http::Responder();  // dropped
}

void WatchHub::Sweep() {
  streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                [](const auto& s) { return !s->responder.alive(); }),
                 streams_.end());
  if (streams_.empty()) tick_.Stop();
}

void WatchHub::OnChange() {
  if (streams_.empty()) return;
  model::WorkersReport report = snapshot_();
  std::string key = ReportChangeKey(report);
  std::string line;
  for (auto& stream : streams_) {
    if (!stream->responder.alive() || stream->last_key == key) continue;
    if (line.empty())
      line = absl::StrCat("{\"report\":", model::WorkersReportToJson(report), "}\n");
    stream->last_key = key;
    Send(stream.get(), line);
  }
  Sweep();
}

void WatchHub::OnTick() {
  absl::Time now = wall_clock_();
  for (auto& stream : streams_) {
    if (!stream->responder.alive() || now - stream->last_write < stream->heartbeat) continue;
    Send(stream.get(), absl::StrCat("{\"heartbeat\":\"", model::FormatTimestamp(now), "\"}\n"));
  }
  Sweep();
}

}  // namespace hawk::api
