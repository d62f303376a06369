#pragma once

// ChangeReader: a pushed document read as the change it makes to the state held, validated in
// full and ordered by `generation`; nothing is applied here.
//
// Ownership and threading: owns the JSON parser whose buffers large documents reuse, and the
// timer that gives them back once such documents stop coming; reads (and, to probe a PATCH's
// retry, applies and undoes within the call) the state it is given; loop thread only.
//
// A whole-state PUT is diffed against the state held while it is read (an unchanged object costs
// a lookup, not a copy); a PATCH is merged into it. Ordering (both verbs): a `generation` lower
// than the one held → Aborted naming the one held; equal with other content or version → Aborted;
// equal with the same → accepted, nothing changes (idempotent retries). PATCH's `baseGeneration`,
// when given, must equal the generation held, else Aborted naming it. Invalid input →
// InvalidArgument naming the field.

#include <uv.h>

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/json_input.h"
#include "agent/uv/timer.h"

namespace hawk::state {

class ChangeReader {
 public:
  // `release_memory`: runs once the parser of a large document gave its buffers back.
  ChangeReader(uv_loop_t* loop, std::function<void()> release_memory);
  ChangeReader(const ChangeReader&) = delete;
  ChangeReader& operator=(const ChangeReader&) = delete;

  // `held`: the state held, nullptr when hawk holds none. `body` is parsed in place when it has
  // json::kReadPadding bytes of spare capacity (as the HTTP layer's request bodies do), else
  // copied.
  absl::StatusOr<model::Delta> ReadPut(const std::string& body, const model::DesiredState* held);
  // `held` is changed and restored within the call when the patch reuses the generation held
  // (only a retry that changes nothing may: it is applied and undone to find out, O(patch)).
  absl::StatusOr<model::Delta> ReadPatch(const std::string& body, model::DesiredState* held);

 private:
  model::json::JsonInput Input(const std::string& body);
  // Keeps the parser's buffers while large documents keep coming; frees them once they stop.
  void AfterParse();

  model::json::DocumentParser parser_;
  std::function<void()> release_memory_;
  uv::Timer release_parser_;
};

}  // namespace hawk::state
