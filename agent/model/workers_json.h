#pragma once

#include <string>

#include "agent/base/json_writer.h"
#include "agent/model/workers.h"

namespace hawk::model {

// hawk.v1.WorkersReport in the proto3 JSON mapping (lowerCamelCase keys, enums by name, 32-bit
// integers as numbers). Every field is written, defaults included, so clients see one shape.
std::string WorkersReportToJson(const WorkersReport& report);
void WriteWorker(const WorkerReport& worker, base::JsonWriter* w);

}  // namespace hawk::model
