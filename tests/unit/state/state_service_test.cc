// StateService on a real loop, with a real Journal in a temporary directory and a real
// Reconciler (wired to a MasterClient pointed at a socket nobody listens on, and a registry that
// never reports a worker: publishing still works, nothing is sent anywhere, and a push is answered
// on the loop's next turn with no worker in its outcome).

#include "agent/state/state_service.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/base/status_field.h"
#include "agent/cli/client.h"
#include "agent/model/delta.h"
#include "agent/model/delta_json.h"
#include "agent/model/desired_json.h"
#include "agent/reconcile/reconciler.h"
#include "agent/registry/registry.h"
#include "agent/store/journal.h"
#include "agent/uv/loop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/support/run_loop_until.h"

namespace hawk::state {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::string_view kState = R"({"version": "v5", "generation": 5,
 "backends": [{"name": "be", "servers": [
    {"name": "s1", "address": "10.0.0.1", "port": 80},
    {"name": "s2", "address": "10.0.0.2", "port": 80, "weight": 10, "state": "DRAIN"}]}],
 "maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]}],
 "acls": [{"name": "/a", "patterns": ["10.0.0.0/8"]}]})";

model::DesiredState Parse(absl::string_view json) {
  absl::StatusOr<model::DesiredState> state = model::ParseDesiredState(json);
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *std::move(state) : model::DesiredState{};
}

// Restores RLIMIT_FSIZE and SIGXFSZ's disposition on scope exit (write() fails with EFBIG past
// the limit).
class ScopedFileSizeLimit {
 public:
  explicit ScopedFileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    previous_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = previous_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~ScopedFileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    ::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit previous_{};
  sighandler_t previous_handler_ = SIG_DFL;
};

// How long a push waits for the workers (there are none: it is answered on the next turn).
constexpr absl::Duration kPushTimeout = absl::Seconds(2);

// One hawk's worth of state handling, as agent/app wires it.
struct Hawk {
  std::unique_ptr<cli::MasterClient> client;
  std::unique_ptr<registry::WorkerRegistry> registry;
  std::unique_ptr<store::Journal> journal;
  std::unique_ptr<StateService> service;
  std::unique_ptr<reconcile::Reconciler> reconciler;

  // The service, the reconciler that reads its state, then what the reconciler uses.
  void Wire(uv_loop_t* loop, const cli::MasterClientOptions& client_options) {
    client = std::make_unique<cli::MasterClient>(loop, client_options);
    registry = std::make_unique<registry::WorkerRegistry>(
        loop, client.get(), registry::RegistryOptions{}, [] { return absl::Now(); });
    service = std::make_unique<StateService>(loop, journal.get());
    reconciler = std::make_unique<reconcile::Reconciler>(
        loop, client.get(), registry.get(), &service->desired(), reconcile::ReconcilerOptions{},
        [] { return absl::Now(); });
  }

  ~Hawk() {
    service.reset();
    reconciler.reset();
    registry.reset();
    client.reset();
    journal.reset();
  }
};

class StateServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "hawk-state-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/state";
    Start();
  }
  void TearDown() override {
    hawk_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());  // no handle or request leaked
    for (const std::string& mount : mounts_) ::umount2(mount.c_str(), MNT_DETACH);
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  // (Re)starts hawk on dir_: a fresh state, journal, reconciler and service, loaded.
  void Start() {
    hawk_.reset();
    hawk_ = std::make_unique<Hawk>();
    store::JournalOptions options = journal_options_;
    options.dir = dir_;
    absl::StatusOr<std::unique_ptr<store::Journal>> journal =
        store::Journal::Open(loop_.get(), options);
    ASSERT_TRUE(journal.ok()) << journal.status();
    hawk_->journal = *std::move(journal);
    cli::MasterClientOptions client_options;
    client_options.address.kind = base::Address::Kind::kUnix;
    client_options.address.path = root_ + "/nobody-listens.sock";
    hawk_->Wire(loop_.get(), client_options);
    absl::Status loaded = hawk_->service->Start(hawk_->reconciler.get());
    ASSERT_TRUE(loaded.ok()) << loaded;
  }

  StateService& service() { return *hawk_->service; }
  // GET /v1/state: the state held (a failure, and an empty state, when there is none).
  const model::DesiredState& Current() {
    static const model::DesiredState kNone;
    const model::DesiredState* state = service().current();
    if (state == nullptr) {
      ADD_FAILURE() << "hawk holds no state";
      return kNone;
    }
    return *state;
  }
  store::Journal& journal() { return *hawk_->journal; }
  const store::JournalStats& journal_stats() { return hawk_->journal->stats(); }

  bool Run(const std::function<bool()>& until, uint64_t timeout_ms = 20000) {
    return testing::RunLoopUntil(loop_.get(), until, timeout_ms);
  }

  // A push in flight: `immediate` is what Push returned; `done` is set once it answered.
  // `done` holds the seq (or the error); `labels` the outcome the push was answered with (its
  // version and generation).
  struct Call {
    absl::Status immediate;
    std::shared_ptr<absl::optional<absl::StatusOr<uint64_t>>> done =
        std::make_shared<absl::optional<absl::StatusOr<uint64_t>>>();
    std::shared_ptr<reconcile::PushOutcome> labels = std::make_shared<reconcile::PushOutcome>();
    bool finished() const { return !immediate.ok() || done->has_value(); }
  };
  Call Submit(bool patch, std::string body) {
    Call call;
    auto done = call.done;
    auto labels = call.labels;
    auto callback = [done, labels](absl::StatusOr<StateService::Pushed> pushed) {
      EXPECT_FALSE(done->has_value()) << "done ran twice";
      if (pushed.ok()) {
        EXPECT_THAT(pushed->outcome.workers, IsEmpty());  // no worker is ever listed
        *labels = pushed->outcome;
        *done = pushed->seq;
      } else {
        *done = pushed.status();
      }
    };
    call.immediate =
        service().Push(patch ? Verb::kPatch : Verb::kPut, body, kPushTimeout, callback);
    // Never inside the call: a refusal comes back at once, an answer from the loop.
    EXPECT_FALSE(call.done->has_value()) << "done ran inside Push";
    return call;
  }
  // Submits and runs the loop until the change is durable or refused.
  absl::StatusOr<uint64_t> Wait(Call call) {
    if (!call.immediate.ok()) return call.immediate;
    EXPECT_TRUE(Run([&] { return call.done->has_value(); }));
    if (!call.done->has_value()) return absl::DeadlineExceededError("the change never finished");
    return **call.done;
  }
  absl::StatusOr<uint64_t> PutAndWait(std::string body) {
    return Wait(Submit(/*patch=*/false, std::move(body)));
  }
  absl::StatusOr<uint64_t> PatchAndWait(std::string body) {
    return Wait(Submit(/*patch=*/true, std::move(body)));
  }

  // Mounts a tmpfs of `size` at `path`; false (the test skips) where mounting is not allowed.
  bool MountTmpfs(const std::string& path, const std::string& size) {
    fs::create_directories(path);
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, absl::StrCat("size=", size).c_str()) != 0) {
      return false;
    }
    mounts_.push_back(path);
    return true;
  }

  std::vector<std::string> Snapshots() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (absl::StartsWith(name, "snapshot-")) names.push_back(name);
    }
    return names;
  }

  uv::Loop loop_;
  std::string root_;
  std::string dir_;
  store::JournalOptions journal_options_;  // Start() uses these limits (its dir is dir_)
  std::unique_ptr<Hawk> hawk_;
  std::vector<std::string> mounts_;
};

TEST_F(StateServiceTest, PutThenGet) {
  EXPECT_EQ(service().current(), nullptr);  // GET: 404 before the first push
  EXPECT_EQ(hawk_->reconciler->desired(), nullptr);
  absl::StatusOr<uint64_t> seq = PutAndWait(std::string(kState));
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, hawk_->reconciler->latest_seq());
  ASSERT_NE(service().current(), nullptr);
  EXPECT_EQ(Current(), Parse(kState));
  EXPECT_EQ(model::DesiredStateToJson(Current()), model::DesiredStateToJson(Parse(kState)));
  EXPECT_EQ(hawk_->reconciler->desired(), service().current());  // published once durable
  EXPECT_EQ(journal_stats().records, 1u);
  EXPECT_EQ(service().stats().puts, 1u);
  EXPECT_EQ(service().stats().objects_changed, 5u);  // 2 servers, 2 entries, 1 pattern

  // A second PUT is diffed: only what differs is written.
  uint64_t bytes = journal_stats().bytes_written;
  model::DesiredState next = Parse(kState);
  next.version = "v6";
  next.generation = 6;
  next.backends["be"].servers.erase("s2");
  next.maps["/m"].Set("c", "3");
  ASSERT_TRUE(PutAndWait(model::DesiredStateToJson(next)).ok());
  EXPECT_EQ(Current(), next);
  EXPECT_LT(journal_stats().bytes_written - bytes, 400u);
  EXPECT_GT(hawk_->reconciler->latest_seq(), *seq);
}

TEST_F(StateServiceTest, PatchMergesIntoTheStateHeld) {
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  absl::StatusOr<uint64_t> seq = PatchAndWait(R"({"generation": 6, "upsert": {
      "backends": [{"name": "be", "servers": [{"name": "s2", "weight": 50},
                                              {"name": "s3", "address": "10.0.0.3"}]}],
      "maps": [{"name": "/m", "entries": [{"key": "a", "value": "10"}]}]},
      "remove": {"backends": [{"name": "be", "servers": ["s1"]}],
                 "acls": [{"name": "/a", "patterns": ["10.0.0.0/8"]}]}})");
  ASSERT_TRUE(seq.ok()) << seq.status();
  model::DesiredState expected = Parse(kState);
  expected.generation = 6;
  expected.backends["be"].servers.erase("s1");
  expected.backends["be"].servers["s2"].weight = 50;
  expected.backends["be"].servers["s3"] = model::ServerSpec{"10.0.0.3", {}, {}, {}};
  expected.maps["/m"].Set("a", "10");
  expected.acls["/a"].Erase("10.0.0.0/8");
  EXPECT_EQ(Current(), expected);
  EXPECT_EQ(Current().version, "v5");  // absent: kept
  EXPECT_EQ(journal_stats().records, 2u);
  EXPECT_EQ(service().stats().patches, 1u);

  // An invalid PATCH is refused at once, naming the field; nothing changes or is written.
  Call bad = Submit(/*patch=*/true, R"({"upsert": {"backends": [{"name": "be", "servers": [
      {"name": "s9", "port": 81}]}]}})");
  ASSERT_FALSE(bad.immediate.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.immediate)) << bad.immediate;
  EXPECT_EQ(base::FieldOf(bad.immediate), "upsert.backends[0].servers[0].address");
  EXPECT_EQ(Current(), expected);
  EXPECT_EQ(service().stats().refused, 1u);
  EXPECT_EQ(journal_stats().records, 2u);
}

TEST_F(StateServiceTest, APatchBeforeAnyPutStartsFromNothing) {
  absl::StatusOr<uint64_t> seq = PatchAndWait(R"({"version": "p1", "upsert": {
      "backends": [{"name": "be", "servers": [{"name": "s1", "address": "10.0.0.1"}]}]}})");
  ASSERT_TRUE(seq.ok()) << seq.status();
  ASSERT_NE(service().current(), nullptr);
  EXPECT_EQ(Current().version, "p1");
  EXPECT_NE(Current().FindServer("be", "s1"), nullptr);
}

TEST_F(StateServiceTest, GenerationRules) {
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());  // generation 5
  const uint64_t records = journal_stats().records;
  const model::DesiredState held = Current();
  auto expect_aborted = [&](const Call& call, absl::string_view field, absl::string_view message) {
    ASSERT_FALSE(call.immediate.ok());
    EXPECT_TRUE(absl::IsAborted(call.immediate)) << call.immediate;
    EXPECT_EQ(base::FieldOf(call.immediate), field);
    EXPECT_EQ(base::CurrentGenerationOf(call.immediate), "5");
    EXPECT_THAT(std::string(call.immediate.message()), HasSubstr(message));
    EXPECT_EQ(Current(), held);
    EXPECT_EQ(journal_stats().records, records);
  };
  model::DesiredState other = held;
  other.maps["/m"].Set("a", "changed");

  // Lower: refused, naming the generation held.
  model::DesiredState older = held;
  older.generation = 4;
  expect_aborted(Submit(false, model::DesiredStateToJson(older)), "generation",
                 "generation 4 is older than the current 5");
  expect_aborted(Submit(true, R"({"generation": 4})"), "generation",
                 "generation 4 is older than the current 5");

  // Equal with the same content: accepted (an idempotent retry) as the latest push, nothing
  // written.
  uint64_t bytes = journal_stats().bytes_written;
  uint64_t unchanged = service().stats().unchanged;
  Call retry = Submit(false, std::string(kState));
  ASSERT_TRUE(retry.immediate.ok()) << retry.immediate;
  Call patch_retry = Submit(true, R"({"generation": 5, "version": "v5", "upsert": {
      "backends": [{"name": "be", "servers": [{"name": "s1", "port": 80}]}],
      "maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"}]}]},
      "remove": {"maps": [{"name": "/m", "keys": ["absent"]}]}})");
  ASSERT_TRUE(patch_retry.immediate.ok()) << patch_retry.immediate;
  EXPECT_EQ(service().stats().unchanged, unchanged + 2);
  ASSERT_TRUE(Run([&] { return retry.done->has_value() && patch_retry.done->has_value(); }));
  ASSERT_TRUE(retry.done->value().ok());
  EXPECT_EQ(retry.done->value().value(), hawk_->reconciler->latest_seq());
  EXPECT_EQ(retry.labels->generation, 5);
  EXPECT_TRUE(patch_retry.done->value().ok());
  EXPECT_EQ(journal_stats().records, records);
  EXPECT_EQ(journal_stats().bytes_written, bytes);
  EXPECT_EQ(Current(), held);

  // Equal with other content, or another version: refused.
  expect_aborted(Submit(false, model::DesiredStateToJson(other)), "generation",
                 "generation 5 already holds other content");
  model::DesiredState relabelled = held;
  relabelled.version = "v5b";
  expect_aborted(Submit(false, model::DesiredStateToJson(relabelled)), "generation",
                 "generation 5 already holds other content");
  expect_aborted(Submit(true, R"({"generation": 5, "upsert": {"maps": [{"name": "/m",
                     "entries": [{"key": "a", "value": "changed"}]}]}})"),
                 "generation", "generation 5 already holds other content");
  expect_aborted(Submit(true, R"({"generation": 5, "version": "v5b"})"), "generation",
                 "generation 5 already holds other content");

  // PATCH baseGeneration must be the generation held.
  expect_aborted(Submit(true, R"({"baseGeneration": 4, "generation": 6})"), "baseGeneration",
                 "baseGeneration 4 is not the generation hawk holds: the current 5");
  expect_aborted(Submit(true, R"({"baseGeneration": "6"})"), "baseGeneration",
                 "baseGeneration 6 is not the generation hawk holds: the current 5");
  absl::StatusOr<uint64_t> ok = PatchAndWait(R"({"baseGeneration": 5, "generation": 6,
      "upsert": {"maps": [{"name": "/m", "entries": [{"key": "a", "value": "6"}]}]}})");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(Current().generation, 6);
  // Without a generation, the one held stays.
  ASSERT_TRUE(PatchAndWait(R"({"upsert": {"maps": [{"name": "/m", "entries": [
      {"key": "a", "value": "7"}]}]}})")
                  .ok());
  EXPECT_EQ(Current().generation, 6);
  EXPECT_EQ(Current().FindMap("/m")->Find("a"), absl::string_view("7"));
  // Higher: accepted.
  model::DesiredState newer = other;
  newer.generation = 9;
  ASSERT_TRUE(PutAndWait(model::DesiredStateToJson(newer)).ok());
  EXPECT_EQ(Current(), newer);
}

TEST_F(StateServiceTest, BaseGenerationWhenNoneIsHeld) {
  ASSERT_TRUE(PutAndWait(R"({"version": "v1"})").ok());  // no generation
  Call call = Submit(true, R"({"baseGeneration": 1, "generation": 2})");
  ASSERT_FALSE(call.immediate.ok());
  EXPECT_TRUE(absl::IsAborted(call.immediate)) << call.immediate;
  EXPECT_EQ(base::FieldOf(call.immediate), "baseGeneration");
  EXPECT_EQ(base::CurrentGenerationOf(call.immediate), "");  // present, empty: none held
  EXPECT_THAT(std::string(call.immediate.message()), HasSubstr("none (hawk holds no generation)"));
  // Any generation goes when none is held.
  ASSERT_TRUE(PatchAndWait(R"({"generation": 0})").ok());
  EXPECT_EQ(Current().generation, 0);
}

// The issue's test: a one-server change in an ingress-scale state costs one journal record of
// O(1) bytes, not a rewrite of the state.
TEST_F(StateServiceTest, OneServerPatchInALargeStateWritesOneSmallRecord) {
  std::string body = R"({"version": "big", "generation": 1, "backends": [)";
  for (int b = 0; b < 100; ++b) {
    absl::StrAppend(&body, b ? "," : "", R"({"name": "be)", b, R"(", "servers": [)");
    for (int s = 0; s < 100; ++s) {
      absl::StrAppend(&body, s ? "," : "", R"({"name": "srv)", s, R"(", "address": "10.)", b, ".0.",
                      s + 1, R"(", "port": 8080, "weight": 100})");
    }
    body += "]}";
  }
  body += R"(], "maps": [{"name": "/etc/haproxy/hosts.map", "entries": [)";
  for (int i = 0; i < 100000; ++i) {
    absl::StrAppend(&body, i ? "," : "", R"({"key": "host-)", i, R"(.example.com", "value": "be)",
                    i % 100, R"("})");
  }
  body += "]}]}";
  ASSERT_TRUE(PutAndWait(body).ok());
  ASSERT_EQ(Current().server_count(), 10000u);
  ASSERT_EQ(Current().map_entry_count(), 100000u);
  const store::JournalStats before = journal_stats();
  const uint64_t file_bytes = fs::file_size(dir_ + "/journal-1.log");

  absl::StatusOr<uint64_t> seq = PatchAndWait(R"({"generation": 2, "upsert": {"backends": [
      {"name": "be42", "servers": [{"name": "srv7", "weight": 1}]}]}})");
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(Current().FindServer("be42", "srv7")->weight, 1);
  EXPECT_EQ(Current().FindServer("be42", "srv8")->weight, 100);
  const store::JournalStats& after = journal_stats();
  EXPECT_EQ(after.records, before.records + 1);
  EXPECT_EQ(after.batches, before.batches + 1);
  EXPECT_LT(after.bytes_written - before.bytes_written, 1024u);
  EXPECT_LT(fs::file_size(dir_ + "/journal-1.log") - file_bytes, 1024u);
  // No snapshot rewrite.
  EXPECT_EQ(after.compactions, 0u);
  EXPECT_EQ(after.snapshot_bytes_written, 0u);
  EXPECT_FALSE(journal().compacting());
  EXPECT_THAT(Snapshots(), IsEmpty());

  // One map entry likewise.
  const uint64_t bytes = after.bytes_written;
  ASSERT_TRUE(PatchAndWait(R"({"upsert": {"maps": [{"name": "/etc/haproxy/hosts.map",
      "entries": [{"key": "host-5.example.com", "value": "be99"}]}]}})")
                  .ok());
  EXPECT_LT(journal_stats().bytes_written - bytes, 1024u);
  EXPECT_EQ(journal_stats().compactions, 0u);
  EXPECT_EQ(Current().FindMap("/etc/haproxy/hosts.map")->Find("host-5.example.com"),
            absl::string_view("be99"));

  // And it survives a restart exactly.
  model::DesiredState acknowledged = Current();
  Start();
  ASSERT_NE(service().current(), nullptr);
  EXPECT_EQ(Current(), acknowledged);
}

TEST_F(StateServiceTest, AFailedJournalWriteUndoesTheChange) {
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  const model::DesiredState acknowledged = Current();
  const uint64_t seq_before = hawk_->reconciler->latest_seq();
  Call failed;
  {
    // The journal file may grow by 10 bytes: the record is cut short by EFBIG and truncated away.
    ScopedFileSizeLimit limit(fs::file_size(dir_ + "/journal-1.log") + 10);
    failed = Submit(true, R"({"generation": 6, "upsert": {"backends": [{"name": "be",
        "servers": [{"name": "s1", "address": "10.9.9.9"}, {"name": "s4", "address": "::1"}]}],
        "maps": [{"name": "/new.map", "entries": [{"key": "k", "value": "v"}]}]},
        "remove": {"acls": [{"name": "/a"}]}})");
    ASSERT_TRUE(failed.immediate.ok()) << failed.immediate;
    EXPECT_EQ(Current().generation, 6);  // applied, not yet durable
    ASSERT_TRUE(Run([&] { return failed.done->has_value(); }));
  }
  ASSERT_FALSE(failed.done->value().ok());
  absl::Status status = failed.done->value().status();
  EXPECT_TRUE(absl::IsOutOfRange(status) || absl::IsResourceExhausted(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("File too large"));
  // GET returns the previous state; nothing was published.
  EXPECT_EQ(Current(), acknowledged);
  EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before);
  EXPECT_EQ(service().stats().persist_failures, 1u);

  // The journal is not broken: the next change goes through.
  ASSERT_TRUE(PatchAndWait(R"({"generation": 6, "upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "z", "value": "26"}]}]}})")
                  .ok());
  model::DesiredState expected = acknowledged;
  expected.generation = 6;
  expected.maps["/m"].Set("z", "26");
  EXPECT_EQ(Current(), expected);
  // Reopening replays exactly what was acknowledged.
  Start();
  ASSERT_NE(service().current(), nullptr);
  EXPECT_EQ(Current(), expected);
}

// A change to objects hawk already manages goes to the reconciler at once, while the journal
// syncs, and is answered only once it is durable. One that creates a managed object waits for the
// journal first: a refusal could not take it back from the workers.
TEST_F(StateServiceTest, AChangeToManagedObjectsIsSentBeforeItIsDurable) {
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  uint64_t seq_before = hawk_->reconciler->latest_seq();
  Call managed = Submit(true, R"({"upsert": {"backends": [{"name": "be",
      "servers": [{"name": "s1", "weight": 3}]}], "maps": [{"name": "/m",
      "entries": [{"key": "a", "value": "9"}, {"key": "new", "value": "1"}]}]}})");
  ASSERT_TRUE(managed.immediate.ok()) << managed.immediate;
  EXPECT_FALSE(managed.done->has_value());                     // the journal has not run yet...
  EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before + 1);  // ...the reconciler has it
  ASSERT_TRUE(Run([&] { return managed.done->has_value(); }));
  ASSERT_TRUE(managed.done->value().ok()) << managed.done->value().status();
  EXPECT_EQ(*managed.done->value(), seq_before + 1);

  Call creates = Submit(true, R"({"upsert": {"backends": [{"name": "be",
      "servers": [{"name": "s9", "address": "10.0.0.9"}]}]}})");
  ASSERT_TRUE(creates.immediate.ok()) << creates.immediate;
  EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before + 1);  // published once durable
  ASSERT_TRUE(Run([&] { return creates.done->has_value(); }));
  ASSERT_TRUE(creates.done->value().ok()) << creates.done->value().status();
  EXPECT_EQ(*creates.done->value(), seq_before + 2);
}

// Refused by the journal after it was sent, a change is taken back: the state is the previous
// one, the reconciler is told to bring every worker back to it (a whole re-read), and the answer
// says so.
TEST_F(StateServiceTest, AChangeSentBeforeAFailedSyncIsTakenBack) {
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  const model::DesiredState acknowledged = Current();
  const uint64_t seq_before = hawk_->reconciler->latest_seq();
  Call failed;
  {
    ScopedFileSizeLimit limit(fs::file_size(dir_ + "/journal-1.log") + 10);
    failed = Submit(true, R"({"upsert": {"backends": [{"name": "be",
        "servers": [{"name": "s1", "weight": 3}]}]}})");
    ASSERT_TRUE(failed.immediate.ok()) << failed.immediate;
    EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before + 1);  // sent
    ASSERT_TRUE(Run([&] { return failed.done->has_value(); }));
  }
  ASSERT_FALSE(failed.done->value().ok());
  EXPECT_THAT(std::string(failed.done->value().status().message()),
              AllOf(HasSubstr("File too large"), HasSubstr("put back")));
  EXPECT_EQ(Current(), acknowledged);
  EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before + 2);  // the take-back
  EXPECT_EQ(service().stats().persist_failures, 1u);
  Start();
  EXPECT_EQ(Current(), acknowledged);
}

// A failed batch undoes every change in it, newest first; a first PUT that fails leaves hawk
// holding no state at all.
TEST_F(StateServiceTest, AFailedBatchUndoesAllOfItsChanges) {
  {
    ScopedFileSizeLimit limit(10);
    Call put = Submit(false, std::string(kState));
    Call patch1 = Submit(true, R"({"upsert": {"maps": [{"name": "/m", "entries": [
        {"key": "a", "value": "p1"}, {"key": "new", "value": "p1"}]}]}})");
    Call patch2 = Submit(true, R"({"generation": 7, "remove": {"backends": [{"name": "be"}]},
        "upsert": {"maps": [{"name": "/m", "entries": [{"key": "a", "value": "p2"}]}]}})");
    ASSERT_TRUE(put.immediate.ok() && patch1.immediate.ok() && patch2.immediate.ok());
    EXPECT_EQ(Current().generation, 7);
    EXPECT_EQ(Current().FindMap("/m")->Find("a"), absl::string_view("p2"));
    ASSERT_TRUE(Run([&] {
      return put.done->has_value() && patch1.done->has_value() && patch2.done->has_value();
    }));
    for (const Call* call : {&put, &patch1, &patch2}) {
      EXPECT_TRUE(absl::IsOutOfRange(call->done->value().status())) << call->done->value().status();
    }
  }
  EXPECT_EQ(service().current(), nullptr);
  EXPECT_EQ(hawk_->reconciler->desired(), nullptr);
  EXPECT_EQ(journal_stats().failed_batches, 1u);
  EXPECT_EQ(journal_stats().fdatasyncs, 0u);
  Start();
  EXPECT_EQ(service().current(), nullptr);
  // And then it works.
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  EXPECT_EQ(Current(), Parse(kState));
}

TEST_F(StateServiceTest, ENospcUndoesTheChange) {
  if (!MountTmpfs(root_ + "/small", "128k")) GTEST_SKIP() << "cannot mount a tmpfs here";
  dir_ = root_ + "/small/state";
  Start();
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  model::DesiredState acknowledged = Current();
  absl::Status failure;
  for (int i = 0; i < 100 && failure.ok(); ++i) {
    std::string body = R"({"upsert": {"maps": [{"name": "/m", "entries": [)";
    for (int j = 0; j < 40; ++j) {
      absl::StrAppend(&body, j ? "," : "", R"({"key": "k)", i, "-", j, R"(", "value": ")",
                      std::string(100, 'v'), R"("})");
    }
    body += "]}]}}";
    absl::StatusOr<uint64_t> seq = PatchAndWait(body);
    if (seq.ok()) {
      acknowledged = Current();
    } else {
      failure = seq.status();
    }
  }
  ASSERT_FALSE(failure.ok()) << "128 KiB never filled up";
  EXPECT_TRUE(absl::IsResourceExhausted(failure)) << failure;
  EXPECT_THAT(std::string(failure.message()), HasSubstr("No space left on device"));
  EXPECT_EQ(Current(), acknowledged);
  Start();
  ASSERT_NE(service().current(), nullptr);
  EXPECT_EQ(Current(), acknowledged);
}

TEST_F(StateServiceTest, GroupCommitOneFdatasyncForAnIteration) {
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  const store::JournalStats before = journal_stats();
  std::vector<Call> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back(
        Submit(true, absl::StrCat(R"({"generation": )", 6 + i,
                                  R"(, "upsert": {"maps": [{"name": "/m", "entries": [)",
                                  R"({"key": "k)", i, R"(", "value": "v"}]}]}})")));
    ASSERT_TRUE(calls.back().immediate.ok()) << calls.back().immediate;
  }
  EXPECT_FALSE(calls[0].done->has_value());  // durable later, from the loop
  ASSERT_TRUE(Run([&] {
    for (const Call& c : calls) {
      if (!c.done->has_value()) return false;
    }
    return true;
  }));
  uint64_t previous = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    ASSERT_TRUE(c.done->value().ok()) << c.done->value().status();
    EXPECT_GT(c.done->value().value(), previous);  // published in order
    previous = c.done->value().value();
    // Each with its own generation, although all were applied before the first was durable.
    EXPECT_EQ(c.labels->generation, static_cast<int64_t>(6 + i));
  }
  const store::JournalStats& after = journal_stats();
  EXPECT_EQ(after.fdatasyncs, before.fdatasyncs + 1);
  EXPECT_EQ(after.batches, before.batches + 1);
  EXPECT_EQ(after.records, before.records + 5);
  EXPECT_EQ(Current().generation, 10);
  EXPECT_EQ(Current().FindMap("/m")->size(), 7u);
  model::DesiredState acknowledged = Current();
  Start();
  EXPECT_EQ(Current(), acknowledged);
}

// Issue 24, defect 2: a push whose journal record would be over the limit is refused at once
// (ResourceExhausted, 413 at the API) naming the size and the limit, and changes nothing; a push
// handled right after it, in the same loop iteration, gets its own answer once durable. The
// journal used to refuse the big record later, from the loop, after the small one's batch: the big
// push got the small one's acknowledgement (and went to the workers unwritten), the small one was
// never answered.
TEST_F(StateServiceTest, AnOversizedRecordIsRefusedUpFrontAndTheNextPushGetsItsOwnAnswer) {
  journal_options_.max_record_bytes = 2048;
  Start();
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  const model::DesiredState before = Current();
  const uint64_t seq_before = hawk_->reconciler->latest_seq();
  const uint64_t records_before = journal_stats().records;

  // A change to a managed object: it would be sent to the workers while the journal syncs.
  Call big = Submit(true, absl::StrCat(R"({"generation": 6, "upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "a", "value": ")",
                                       std::string(3000, 'x'), R"("}]}]}})"));
  Call small = Submit(true, R"({"generation": 7, "upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "b", "value": "small"}]}]}})");
  auto describe = [](const Call& call) -> std::string {
    if (!call.immediate.ok()) return absl::StrCat("refused at once: ", call.immediate.ToString());
    if (!call.done->has_value()) return "never answered";
    if (!call.done->value().ok()) return call.done->value().status().ToString();
    return absl::StrCat("durable, published as reconciler seq ", call.done->value().value());
  };
  ASSERT_TRUE(Run([&] { return big.finished() && small.finished(); }, 3000))
      << "big: " << describe(big) << "; small: " << describe(small);
  EXPECT_TRUE(absl::IsResourceExhausted(big.immediate)) << big.immediate;
  EXPECT_THAT(std::string(big.immediate.message()),
              AllOf(HasSubstr("more than the limit of 2048 bytes"), HasSubstr("nothing changed")));
  EXPECT_FALSE(big.done->has_value());
  ASSERT_TRUE(small.immediate.ok()) << small.immediate;
  ASSERT_TRUE(small.done->value().ok()) << small.done->value().status();
  EXPECT_EQ(*small.done->value(), seq_before + 1);  // the big one was never published

  model::DesiredState expected = before;
  expected.generation = 7;
  expected.maps["/m"].Set("b", "small");
  EXPECT_EQ(Current(), expected);
  EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before + 1);
  EXPECT_EQ(journal_stats().records, records_before + 1);
  Start();
  EXPECT_EQ(Current(), expected);

  // A value of DEL bytes (0x7F) costs one byte each in the record, as in the request: JSON needs
  // no escape for it (it used to be written as \u007f, six times the size).
  ASSERT_TRUE(PatchAndWait(absl::StrCat(R"({"upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "del", "value": ")",
                                        std::string(1500, '\x7f'), R"("}]}]}})"))
                  .ok());
  EXPECT_EQ(Current().FindMap("/m")->Find("del"), absl::string_view(std::string(1500, '\x7f')));
}

// A dry run answers as the push would (the same refusals), and keeps nothing: not the state, not
// a record, not a sequence number, not the generation.
TEST_F(StateServiceTest, ADryRunRefusesWhatThePushWouldAndKeepsNothing) {
  journal_options_.max_record_bytes = 2048;
  Start();
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  const model::DesiredState before = Current();
  const uint64_t seq_before = hawk_->reconciler->latest_seq();
  const uint64_t records_before = journal_stats().records;
  const std::string change = R"({"generation": 6, "upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "a", "value": "changed"}]}]}})";

  absl::StatusOr<StateService::DryRun> dry = service().Preview(Verb::kPatch, change);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_TRUE(dry->changes);
  EXPECT_EQ(dry->generation, 6);
  EXPECT_EQ(Current(), before);
  EXPECT_EQ(hawk_->reconciler->latest_seq(), seq_before);
  EXPECT_EQ(journal_stats().records, records_before);
  EXPECT_EQ(service().stats().dry_runs, 1u);

  // The same refusals: an older generation, an invalid field, a change too large to journal.
  EXPECT_TRUE(absl::IsAborted(
      service().Preview(Verb::kPatch, R"({"generation": 4, "upsert": {}})").status()));
  absl::Status invalid =
      service().Preview(Verb::kPut, R"({"version": "v", "backends": [{"name": ""}]})").status();
  EXPECT_TRUE(absl::IsInvalidArgument(invalid)) << invalid;
  absl::Status large =
      service()
          .Preview(Verb::kPatch, absl::StrCat(R"({"upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "a", "value": ")",
                                              std::string(3000, 'x'), R"("}]}]}})"))
          .status();
  EXPECT_TRUE(absl::IsResourceExhausted(large)) << large;
  EXPECT_EQ(Current(), before);

  // Nothing to change: said so.
  absl::StatusOr<StateService::DryRun> same = service().Preview(Verb::kPut, std::string(kState));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->changes);
  EXPECT_THAT(same->workers, IsEmpty());

  // The generation was not consumed: the real push takes it.
  ASSERT_TRUE(PatchAndWait(change).ok());
  EXPECT_EQ(Current().FindMap("/m")->Find("a"), "changed");
}

// Issue 24, item 8: loading refuses a snapshot above max_snapshot_bytes, so a push whose state
// would need a bigger snapshot is refused (ResourceExhausted, 413 at the API), naming the size and
// the limit, and changes nothing. Compaction then never writes a snapshot that would keep hawk
// from starting again.
TEST_F(StateServiceTest, APushThatWouldOutgrowTheSnapshotLimitIsRefused) {
  journal_options_.max_snapshot_bytes = 4096;
  journal_options_.compact_after_bytes = 1;  // a snapshot after every push
  Start();
  ASSERT_TRUE(PutAndWait(std::string(kState)).ok());
  model::DesiredState acknowledged = Current();
  absl::Status refused;
  for (int i = 0; i < 10 && refused.ok(); ++i) {
    absl::StatusOr<uint64_t> seq = PatchAndWait(absl::StrCat(
        R"({"generation": )", 6 + i, R"(, "upsert": {"maps": [{"name": "/m", "entries": [)",
        R"({"key": "k)", i, R"(", "value": ")", std::string(1000, 'v'), R"("}]}]}})"));
    if (seq.ok()) {
      acknowledged = Current();
      ASSERT_TRUE(Run([&] { return !journal().compacting(); }));
    } else {
      refused = seq.status();
    }
  }
  EXPECT_FALSE(refused.ok()) << "the state grew past the snapshot limit: "
                             << model::DesiredStateToJson(Current()).size() + 1 << " bytes";
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("snapshot"), HasSubstr("4096 bytes"), HasSubstr("nothing changed")));
  EXPECT_EQ(Current(), acknowledged);
  EXPECT_LE(model::DesiredStateToJson(Current()).size() + 1, 4096u);

  // A push that does not grow the state still goes, and hawk starts again from what it wrote.
  ASSERT_TRUE(PatchAndWait(R"({"upsert": {"maps": [{"name": "/m", "entries": [
      {"key": "k0", "value": "short"}]}]}})")
                  .ok());
  acknowledged = Current();
  ASSERT_TRUE(Run([&] { return !journal().compacting(); }));
  EXPECT_GE(journal_stats().compactions, 1u);
  Start();
  ASSERT_NE(service().current(), nullptr);
  EXPECT_EQ(Current(), acknowledged);
}

// Records of a hawk that did not count may hold a state whose snapshot is over the limit. It
// loads (records are not snapshots), pushes that grow it are refused, pushes that do not still
// go, no compaction writes a snapshot loading would refuse, and once pushes shrink it a
// compaction goes through.
TEST_F(StateServiceTest, AStateOverTheSnapshotLimitLoadedFromRecordsCanShrink) {
  model::DesiredState big = Parse(kState);
  for (int i = 0; i < 10; ++i) big.maps["/big"].Set(absl::StrCat("k", i), std::string(1000, 'v'));
  hawk_.reset();
  {
    store::JournalOptions options;
    options.dir = dir_;
    absl::StatusOr<std::unique_ptr<store::Journal>> journal =
        store::Journal::Open(loop_.get(), options);
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_TRUE((*journal)->Load().ok());
    bool done = false;
    ASSERT_TRUE((*journal)
                    ->Append(model::DeltaToJson(model::DeltaFromState(big)),
                             [&](absl::Status status) {
                               EXPECT_TRUE(status.ok()) << status;
                               done = true;
                             })
                    .ok());
    ASSERT_TRUE(Run([&] { return done; }));
  }
  journal_options_.max_snapshot_bytes = 4096;
  journal_options_.compact_after_bytes = 1;  // a compaction is due after every push
  Start();
  ASSERT_EQ(Current(), big);

  absl::StatusOr<uint64_t> grown = PatchAndWait(R"({"upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "new", "value": "1"}]}]}})");
  EXPECT_TRUE(absl::IsResourceExhausted(grown.status())) << grown.status();
  EXPECT_EQ(Current(), big);
  ASSERT_TRUE(PatchAndWait(R"({"upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "a", "value": "9"}]}]}})")
                  .ok());  // the same size
  ASSERT_TRUE(Run([&] { return !journal().compacting(); }));
  EXPECT_THAT(Snapshots(), IsEmpty());
  ASSERT_TRUE(PatchAndWait(R"({"upsert": {"maps": [{"name": "/m",
      "entries": [{"key": "b", "value": "8"}]}]}})")
                  .ok());
  EXPECT_THAT(Snapshots(), IsEmpty());

  ASSERT_TRUE(PatchAndWait(R"({"remove": {"maps": [{"name": "/big", "whole": true}]}})").ok());
  ASSERT_TRUE(Run([&] { return !journal().compacting(); }));
  EXPECT_EQ(Snapshots().size(), 1u);
  const model::DesiredState acknowledged = Current();
  EXPECT_EQ(acknowledged.FindMap("/big"), nullptr);
  Start();
  EXPECT_EQ(Current(), acknowledged);
}

TEST_F(StateServiceTest, ACorruptRecordIsDataLoss) {
  hawk_.reset();
  {
    absl::StatusOr<std::unique_ptr<store::Journal>> journal = [&] {
      store::JournalOptions options;
      options.dir = dir_;
      return store::Journal::Open(loop_.get(), options);
    }();
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_TRUE((*journal)->Load().ok());
    bool done = false;
    ASSERT_TRUE((*journal)
                    ->Append(R"({"backends":[{"name":"be;reload"}]})",
                             [&](absl::Status s) {
                               EXPECT_TRUE(s.ok()) << s;
                               done = true;
                             })
                    .ok());
    ASSERT_TRUE(Run([&] { return done; }));
  }
  hawk_ = std::make_unique<Hawk>();
  store::JournalOptions options;
  options.dir = dir_;
  hawk_->journal = *store::Journal::Open(loop_.get(), options);
  hawk_->Wire(loop_.get(), cli::MasterClientOptions{});
  absl::Status loaded = hawk_->service->Start(hawk_->reconciler.get());
  EXPECT_TRUE(absl::IsDataLoss(loaded)) << loaded;
  EXPECT_THAT(std::string(loaded.message()), HasSubstr("desired-state journal record 1"));
  EXPECT_THAT(std::string(loaded.message()), HasSubstr("backends[0].name"));
}

}  // namespace
}  // namespace hawk::state
