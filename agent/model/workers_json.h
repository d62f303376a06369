#pragma once

#include <string>

#include "absl/time/time.h"
#include "agent/base/json_writer.h"
#include "agent/model/workers.h"

namespace hawk::model {

// hawk.v1.WorkersReport in the proto3 JSON mapping (lowerCamelCase keys, enums by name, 32-bit
// integers as numbers). Every field is written, defaults included, so clients see one shape.
std::string WorkersReportToJson(const WorkersReport& report);
void WriteWorker(const WorkerReport& worker, base::JsonWriter* w);
void WriteStale(const StaleObject& stale, base::JsonWriter* w);
void WriteRefusal(const Refusal& refusal, base::JsonWriter* w);
// google.protobuf.Timestamp's JSON form: RFC 3339 in UTC with milliseconds.
std::string FormatTimestamp(absl::Time t);

}  // namespace hawk::model
