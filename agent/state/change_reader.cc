#include "agent/state/change_reader.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/status_field.h"
#include "agent/base/status_macros.h"
#include "agent/model/desired_json.h"
#include "agent/model/patch.h"

namespace hawk::state {
namespace {

// A parser that grew past this holds on to its buffers only while such documents keep coming.
// Why keep them at all (bench/put_memory, the ingress document, 2026-12-07): while a whole-state
// PUT is read, hawk holds the body (5.2 MiB) and simdjson's index of it (4.5 MiB) on top of the
// state, whatever happens between PUTs, so keeping them changes hawk's peak RSS in nothing. Giving
// them back after each PUT would bring the RSS between PUTs down by ~10 MiB, but the next PUT
// would touch ~2,500 fresh pages again: 13 ms of CPU per PUT becomes 40-50 ms, over the 40 ms a
// one-change PUT may take end to end. So they stay while PUTs keep coming (a controller resyncing
// every few seconds included), and go back once they stop.
constexpr size_t kLargeDocumentBytes = 1 << 20;
constexpr absl::Duration kReleaseParserAfter = absl::Seconds(10);

absl::Status Aborted(std::string message, absl::string_view field,
                     absl::optional<int64_t> current) {
  return base::WithCurrentGeneration(base::WithField(absl::AbortedError(std::move(message)), field),
                                     current ? absl::StrCat(*current) : std::string());
}

std::string Held(absl::optional<int64_t> generation) {
  return generation ? absl::StrCat("the current ", *generation) : "none (hawk holds no generation)";
}

absl::optional<int64_t> HeldGeneration(const model::DesiredState* held) {
  if (held == nullptr) return absl::nullopt;
  return held->generation;
}

// The ordering rule, for both verbs: `same_content` and `version` describe the state the change
// would leave.
absl::Status CheckGeneration(const model::DesiredState* held, absl::optional<int64_t> generation,
                             bool same_content, absl::string_view version) {
  absl::optional<int64_t> current = HeldGeneration(held);
  if (!current || !generation) return absl::OkStatus();
  if (*generation < *current) {
    return Aborted(absl::StrCat("generation ", *generation, " is older than the current ", *current,
                                "; nothing changed"),
                   "generation", current);
  }
  if (*generation == *current && !(same_content && version == held->version)) {
    return Aborted(absl::StrCat("generation ", *generation,
                                " already holds other content; use a higher generation to change "
                                "it; nothing changed"),
                   "generation", current);
  }
  return absl::OkStatus();
}

const model::DesiredState& OrEmpty(const model::DesiredState* held) {
  static const model::DesiredState kEmpty;
  return held != nullptr ? *held : kEmpty;
}

}  // namespace

ChangeReader::ChangeReader(uv_loop_t* loop, std::function<void()> release_memory)
    : release_memory_(std::move(release_memory)), release_parser_(loop) {}

model::json::JsonInput ChangeReader::Input(const std::string& body) {
  bool padded = body.capacity() >= body.size() + model::json::kReadPadding;
  return model::json::JsonInput(body, padded, &parser_);
}

void ChangeReader::AfterParse() {
  if (parser_.capacity() < kLargeDocumentBytes) return;
  release_parser_.Start(kReleaseParserAfter, [this] {
    parser_.Release();
    // The parser's buffers and the bodies were freed into the heap (main.cc keeps blocks below
    // 32 MiB there): their pages go back.
    if (release_memory_) release_memory_();
  });
}

absl::StatusOr<model::Delta> ChangeReader::ReadPut(const std::string& body,
                                                   const model::DesiredState* held) {
  absl::StatusOr<model::Delta> delta = model::ParseDesiredStateAsDelta(Input(body), OrEmpty(held));
  AfterParse();
  if (!delta.ok()) return delta.status();
  RETURN_IF_ERROR(
      CheckGeneration(held, delta->generation, held != nullptr && delta->empty(), delta->version));
  return delta;
}

absl::StatusOr<model::Delta> ChangeReader::ReadPatch(const std::string& body,
                                                     model::DesiredState* held) {
  absl::StatusOr<model::StatePatch> patch = model::ParseStatePatch(Input(body), OrEmpty(held));
  AfterParse();
  if (!patch.ok()) return patch.status();
  if (patch->base_generation) {
    absl::optional<int64_t> current = HeldGeneration(held);
    if (current != patch->base_generation) {
      return Aborted(
          absl::StrCat("baseGeneration ", *patch->base_generation,
                       " is not the generation hawk holds: ", Held(current), "; nothing changed"),
          "baseGeneration", current);
    }
  }
  model::Delta delta = model::PatchToDelta(*patch, OrEmpty(held));
  if (held == nullptr) return delta;  // no generation held: any goes
  bool same_content = false;
  if (patch->generation && patch->generation == held->generation) {
    // Only a retry that changes nothing may reuse the generation held: find out by applying it
    // and undoing it (O(patch)).
    std::string version_before = held->version;
    model::AppliedDelta probe = model::ApplyDelta(delta, held);
    same_content = probe.summary.empty() && held->version == version_before;
    model::UndoDelta(std::move(probe.undo), held);
  }
  RETURN_IF_ERROR(CheckGeneration(held, patch->generation, same_content, held->version));
  return delta;
}

}  // namespace hawk::state
