// Micro-benchmarks of the desired-state model at ingress scale (10,000 servers, 100,000 map
// entries): what a whole-state PUT costs hawk before any I/O (parse the ~5.8 MB document, diff it
// against the state held, apply the delta), and what a one-object PATCH costs.
//
//   build/default/bench/state_codec [--benchmark_filter=…]

#include <benchmark/benchmark.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "agent/model/delta.h"
#include "agent/model/delta_json.h"
#include "agent/model/desired_json.h"
#include "agent/model/json_input.h"
#include "agent/model/patch.h"
#include "agent/model/snapshot_size.h"
#include "agent/plan/server_lines.h"
#include "bench/ingress_document.h"
#include "tests/support/model_oracle.h"

namespace {

using hawk::model::DesiredState;

using hawk::bench::IngressDocument;

const std::string& Original() {
  static const std::string* doc = new std::string(IngressDocument(10000, 100000, "be_5"));
  return *doc;
}
const std::string& OneChange() {
  static const std::string* doc = new std::string(IngressDocument(10000, 100000, "be_X"));
  return *doc;
}

void BM_ParseDocument(benchmark::State& state) {
  for (auto _ : state) {
    absl::StatusOr<DesiredState> parsed = hawk::model::ParseDesiredState(Original());
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Original().size()));
}
BENCHMARK(BM_ParseDocument)->Unit(benchmark::kMillisecond);

void BM_DiffOneChange(benchmark::State& state) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  DesiredState next = *hawk::model::ParseDesiredState(OneChange());
  for (auto _ : state) {
    state.PauseTiming();
    DesiredState copy = next;
    state.ResumeTiming();
    hawk::model::Delta delta = hawk::model::DiffStates(held, std::move(copy));
    benchmark::DoNotOptimize(delta);
  }
}
BENCHMARK(BM_DiffOneChange)->Unit(benchmark::kMillisecond);

// A whole-state PUT before any I/O, alternating the two documents so that each one changes
// something: `read(doc, held, parser)` turns the document into the delta from the state held
// (`parser`: kept between documents, or nullptr for a fresh one each time); the delta is then
// applied and written as its journal record, as StateService does.
template <typename Read>
void RunWholePut(benchmark::State& state, bool reuse_parser, Read read) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  hawk::model::json::DocumentParser parser;
  bool flip = false;
  for (auto _ : state) {
    const std::string& doc = flip ? Original() : OneChange();
    flip = !flip;
    hawk::model::Delta delta = read(doc, held, reuse_parser ? &parser : nullptr);
    hawk::model::AppliedDelta applied = hawk::model::ApplyDelta(delta, &held);
    std::string record = hawk::model::DeltaToJson(delta);
    benchmark::DoNotOptimize(record);
  }
}

// The way hawk read a PUT before ParseDesiredStateAsDelta: the document's whole state, then
// DiffStates against the state held.
hawk::model::Delta ParseThenDiff(const std::string& doc, const DesiredState& held,
                                 hawk::model::json::DocumentParser* parser) {
  DesiredState parsed = *hawk::model::ParseDesiredState(
      hawk::model::json::JsonInput(doc, /*is_padded=*/false, parser));
  return hawk::model::DiffStates(held, std::move(parsed));
}

void BM_WholePutBeforeIo(benchmark::State& state) {
  RunWholePut(state, /*reuse_parser=*/false, ParseThenDiff);
}
BENCHMARK(BM_WholePutBeforeIo)->Unit(benchmark::kMillisecond);

// What hawk's PUT does since the document is read as the change from the state held
// (ParseDesiredStateAsDelta): BM_WholePutBeforeIoReusedParser is the baseline it replaced. Both
// parse with a parser kept between documents, as hawk's StateService does.
void BM_WholePutAsDeltaBeforeIo(benchmark::State& state) {
  RunWholePut(state, /*reuse_parser=*/true,
              [](const std::string& doc, const DesiredState& held,
                 hawk::model::json::DocumentParser* parser) {
                return *hawk::model::ParseDesiredStateAsDelta(
                    hawk::model::json::JsonInput(doc, /*is_padded=*/false, parser), held);
              });
}
BENCHMARK(BM_WholePutAsDeltaBeforeIo)->Unit(benchmark::kMillisecond);

void BM_WholePutBeforeIoReusedParser(benchmark::State& state) {
  RunWholePut(state, /*reuse_parser=*/true, ParseThenDiff);
}
BENCHMARK(BM_WholePutBeforeIoReusedParser)->Unit(benchmark::kMillisecond);

// One server's address changed by a PATCH: parsed, applied, its journal record written; with
// `counted`, the snapshot's size counted from the change too, as StateService does on every push
// (the difference between the two is what counting costs).
void RunPatchOneServer(benchmark::State& state, bool counted) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  hawk::model::SnapshotSize size;
  if (counted) size.Reset(held);
  int i = 0;
  for (auto _ : state) {
    std::string body = absl::StrCat(
        R"({"upsert":{"backends":[{"name":"be_app","servers":[{"name":"SRV_5","address":"10.0.0.)",
        1 + (i++ % 200), R"("}]}]}})");
    hawk::model::StatePatch patch = *hawk::model::ParseStatePatch(body, held);
    hawk::model::Delta delta = hawk::model::PatchToDelta(patch, held);
    hawk::model::AppliedDelta applied = hawk::model::ApplyDelta(delta, &held);
    if (counted) {
      hawk::model::SnapshotSize::Undo undo = size.Apply(applied.summary, held);
      benchmark::DoNotOptimize(undo);
    }
    std::string record = hawk::model::DeltaToJson(delta);
    benchmark::DoNotOptimize(record);
  }
}
void BM_PatchOneServer(benchmark::State& state) { RunPatchOneServer(state, false); }
BENCHMARK(BM_PatchOneServer)->Unit(benchmark::kMicrosecond);
void BM_PatchOneServerCounted(benchmark::State& state) { RunPatchOneServer(state, true); }
BENCHMARK(BM_PatchOneServerCounted)->Unit(benchmark::kMicrosecond);

// Counting the whole state, once at start (BM_CanonicalJson is what encoding it costs).
void BM_SnapshotSizeReset(benchmark::State& state) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  hawk::model::SnapshotSize size;
  for (auto _ : state) {
    size.Reset(held);
    benchmark::DoNotOptimize(size.bytes());
  }
}
BENCHMARK(BM_SnapshotSizeReset)->Unit(benchmark::kMillisecond);

void BM_CanonicalJson(benchmark::State& state) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  for (auto _ : state) {
    std::string json = hawk::model::DesiredStateToJson(held);
    benchmark::DoNotOptimize(json);
  }
}
BENCHMARK(BM_CanonicalJson)->Unit(benchmark::kMillisecond);

// Writing the desired servers into the configuration before a reload (--write-servers): the
// 10,000 servers of the ingress state as the slots of one template, written over the operator's
// template, then over the configuration a previous reload wrote (what every later reload does).
constexpr char kSlotConfig[] =
    "global\n    master-worker\ndefaults\n    mode http\nfrontend fe\n    bind :80\n"
    "    default_backend be_app\nbackend be_app\n    balance roundrobin\n"
    "    server-template SRV_ 1-10000 192.0.2.1:80 check disabled\n";

void BM_WriteServersOverTemplate(benchmark::State& state) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  for (auto _ : state) {
    hawk::plan::ServerLines lines = hawk::plan::WriteDesiredServers(kSlotConfig, held);
    benchmark::DoNotOptimize(lines);
  }
}
BENCHMARK(BM_WriteServersOverTemplate)->Unit(benchmark::kMillisecond);

void BM_WriteServersOverWritten(benchmark::State& state) {
  DesiredState held = *hawk::model::ParseDesiredState(Original());
  std::string written = hawk::plan::WriteDesiredServers(kSlotConfig, held).config;
  for (auto _ : state) {
    hawk::plan::ServerLines lines = hawk::plan::WriteDesiredServers(written, held);
    benchmark::DoNotOptimize(lines);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * written.size()));
}
BENCHMARK(BM_WriteServersOverWritten)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
