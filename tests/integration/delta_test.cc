// Delta pushes (PATCH /v1/state) and the cost of a change against a real HAProxy: a change of
// one entry in a 100,000-entry map reaches every worker as O(1) commands; the journal replays
// exactly what was acknowledged after SIGKILL; a worker seeded after a reload holds what one that
// received every delta holds; a worker started by hawk's reload is born holding the map file hawk
// wrote, and gets none of its entries over the CLI.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/haproxy_cli_reader.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/unix_relay.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kMapEntries = 100000;

class DeltaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(dir_, "A");
    ASSERT_TRUE(backend_->ok()) << backend_->error();
    frontend_port_ = FreeTcpPort();
  }
  void StartHaproxy(const std::string& extra_global = "") {
    haproxy_ = std::make_unique<HaproxyProcess>(
        dir_, StateHaproxyConfig(dir_, frontend_port_, backend_->port(), extra_global));
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
  }
  // hawk behind a counting relay (every byte it sends to the master goes through it).
  void StartHawk() {
    relay_ = std::make_unique<UnixRelay>(dir_.File("relay.sock"), haproxy_->master_socket());
    ASSERT_TRUE(relay_->Start());
    StartHawkOn(relay_->path());
  }
  void StartHawkOn(const std::string& master_socket) {
    hawk_ = std::make_unique<HawkProcess>(
        dir_, master_socket,
        // --haproxy-config: on 2.6 hawk relays to a leaving worker only within its known grace.
        std::vector<std::string>{"--state-dir", dir_.File("state"), "--poll-interval", "60s",
                                 "--resync-interval", "600s", "--table-files-dir", dir_.path(),
                                 "--haproxy-config", haproxy_->config_path()});
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(5)))
        << hawk_->LogTail();
  }
  std::string Cli(int pid, const std::string& command) {
    return MasterCli::Command(haproxy_->master_socket(), "@!" + std::to_string(pid) + " " + command,
                              seconds(10));
  }
  // `show map` as sorted "key value" lines.
  std::vector<std::string> Map(int pid) {
    std::vector<std::string> lines;
    for (absl::string_view line :
         absl::StrSplit(Cli(pid, "show map " + dir_.File("hosts.map")), '\n')) {
      size_t space = line.find(' ');
      if (!absl::StartsWith(line, "0x") || space == absl::string_view::npos) continue;
      lines.emplace_back(line.substr(space + 1));
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  std::string BigState(const std::string& version, int generation, int weight) {
    std::string json = absl::StrCat(
        R"({"version":")", version, R"(","generation":)", generation,
        R"(,"backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"127.0.0.1","port":)",
        backend_->port(), R"(,"weight":)", weight, R"(}]}],"maps":[{"name":")",
        dir_.File("hosts.map"), R"(","entries":[)");
    for (int i = 0; i < kMapEntries; ++i) {
      absl::StrAppend(&json, i ? "," : "", R"({"key":"host)", i, R"(.example.com","value":"be_)",
                      i % 7, R"("})");
    }
    absl::StrAppend(&json, "]}]}");
    return json;
  }
  std::string EntryPatch(int generation, const std::string& key, const std::string& value) {
    return absl::StrCat(R"({"generation":)", generation, R"(,"upsert":{"maps":[{"name":")",
                        dir_.File("hosts.map"), R"(","entries":[{"key":")", key, R"(","value":")",
                        value, R"("}]}]}})");
  }
  // Lines (commands and payload lines) hawk sent to the master while `push` ran.
  uint64_t LinesDuring(const std::function<void()>& push) {
    uint64_t before = relay_->lines_to_target();
    push();
    return relay_->lines_to_target() - before;
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<UnixRelay> relay_;
  std::unique_ptr<HawkProcess> hawk_;
  int frontend_port_ = -1;
};

TEST_F(DeltaTest, OneEntryOfAHundredThousandIsOneCommandWhetherPatchedOrPut) {
  StartHaproxy();
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  HttpResult first = hawk_->Put("/v1/state?timeoutMs=30000", BigState("v1", 1, 10));
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_NE(first.body.find("\"APPLIED\""), std::string::npos) << first.body;
  ASSERT_EQ(Map(worker).size(), static_cast<size_t>(kMapEntries));

  // PATCH one entry: one `set map` line, nothing observed, nothing replaced.
  HttpResult patched;
  uint64_t lines = LinesDuring(
      [&] { patched = hawk_->Patch("/v1/state", EntryPatch(2, "host7.example.com", "be_new")); });
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_NE(patched.body.find("\"APPLIED\""), std::string::npos) << patched.body;
  EXPECT_LE(lines, 3u) << "a one-entry PATCH sent " << lines << " lines to the master";
  std::string got = Cli(worker, "get map " + dir_.File("hosts.map") + " host7.example.com");
  EXPECT_NE(got.find("value=\"be_new\""), std::string::npos) << got;

  // A new key is one `add map`.
  lines = LinesDuring(
      [&] { patched = hawk_->Patch("/v1/state", EntryPatch(3, "fresh.example.com", "be_fresh")); });
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_LE(lines, 3u);
  EXPECT_EQ(Map(worker).size(), static_cast<size_t>(kMapEntries + 1));

  // A whole-state PUT that differs in one server field is diffed: one `set server`, and the
  // entries the PATCHes added or changed are put back as the document says (2 entries).
  HttpResult put;
  lines = LinesDuring([&] { put = hawk_->Put("/v1/state", BigState("v4", 4, 20)); });
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_NE(put.body.find("\"APPLIED\""), std::string::npos) << put.body;
  EXPECT_LE(lines, 6u) << "a PUT changing 3 objects sent " << lines << " lines";
  EXPECT_EQ(ReadServerRow(haproxy_->master_socket(), worker, "be_app", "SRV_1").weight, 20);
  std::vector<std::string> map = Map(worker);
  EXPECT_EQ(map.size(), static_cast<size_t>(kMapEntries));
  EXPECT_TRUE(std::binary_search(map.begin(), map.end(), "host7.example.com be_0"));
}

TEST_F(DeltaTest, AcknowledgedPatchesSurviveSigkill) {
  StartHaproxy();
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", BigState("v1", 1, 10)).status, 200);
  for (int g = 2; g <= 20; ++g) {
    ASSERT_EQ(hawk_->Patch("/v1/state", EntryPatch(g, absl::StrCat("k", g), "be_x")).status, 200);
  }
  std::string acknowledged = hawk_->Get("/v1/state").body;
  ASSERT_TRUE(hawk_->process()->Signal(SIGKILL));
  ASSERT_TRUE(hawk_->process()->WaitExit(seconds(5)));
  StartHawkOn(relay_->path());
  // The restarted hawk observes the worker's 100,000 entries while this is read: slow under
  // ASan, so the read gets more than Get()'s 5 s (it once timed out there with an empty body).
  HttpResult after = Fetch(hawk_->api_address(), "GET", "/v1/state", "", seconds(60));
  ASSERT_TRUE(after.ok) << after.error << "\n" << hawk_->LogTail();
  EXPECT_EQ(after.body, acknowledged);
}

TEST_F(DeltaTest, AWorkerSeededAfterAReloadHoldsWhatDeltasGaveTheOldOne) {
  // grace keeps the old worker updatable after the reload, so both can be compared.
  StartHaproxy("    grace 10s\n");
  StartHawk();
  int old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state", BigState("v1", 1, 10)).status, 200);
  for (int g = 2; g <= 30; ++g) {
    std::string body =
        g % 3 == 0
            ? absl::StrCat(R"({"generation":)", g, R"(,"remove":{"maps":[{"name":")",
                           dir_.File("hosts.map"), R"(","keys":["host)", g, R"(.example.com"]}]}})")
            : EntryPatch(g, absl::StrCat("host", g * 11, ".example.com"), absl::StrCat("be_g", g));
    HttpResult r = hawk_->Patch("/v1/state", body);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  HttpResult weight = hawk_->Patch(
      "/v1/state",
      R"({"generation":31,"upsert":{"backends":[{"name":"be_app","servers":[{"name":"SRV_1","weight":42}]}]}})");
  ASSERT_EQ(weight.status, 200) << weight.body;

  InFlightRequest slow(frontend_port_, "/slow?ms=3000");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  int new_worker = haproxy_->WaitForNewWorker(old_worker, seconds(10));
  ASSERT_GT(new_worker, 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        WorkersView view = hawk_->Workers();
        const WorkerView* w = view.Find(new_worker);
        return w != nullptr && w->in_sync && w->applied_version == "v1";
      },
      seconds(10)))
      << hawk_->Workers().raw;
  std::vector<std::string> seeded = Map(new_worker);
  std::vector<std::string> incremental = Map(old_worker);
  EXPECT_EQ(seeded.size(), incremental.size());
  EXPECT_TRUE(seeded == incremental) << "the seeded worker's map differs from the old worker's";
  EXPECT_EQ(ReadServerRow(haproxy_->master_socket(), new_worker, "be_app", "SRV_1").weight, 42);
  EXPECT_EQ(ReadServerRow(haproxy_->master_socket(), old_worker, "be_app", "SRV_1").weight, 42);
  // Each worker reports the generation it holds in full, in /v1/workers and in /metrics.
  ASSERT_TRUE(WaitUntil(
      [&] {
        WorkersView view = hawk_->Workers();
        const WorkerView* n = view.Find(new_worker);
        const WorkerView* o = view.Find(old_worker);
        return n && o && n->applied_generation == "31" && o->applied_generation == "31";
      },
      seconds(5)))
      << hawk_->Workers().raw;
  std::string metrics = hawk_->Get("/metrics").body;
  for (const auto& [pid, role] : {std::pair{new_worker, "CURRENT"}, {old_worker, "LEAVING"}}) {
    std::string series = absl::StrCat(R"(hawk_worker_applied_generation{pid=")", pid, R"(",role=")",
                                      role, R"("} 31)");
    EXPECT_NE(metrics.find(series), std::string::npos) << series << " not in:\n" << metrics;
  }
}

// Before a reload hawk writes the desired map file (mode, owner and group kept); the new worker
// reads it at start and its seed sends the map nothing: a handful of lines, not 100,001.
TEST_F(DeltaTest, ANewWorkerIsBornHoldingTheMapFileHawkWrote) {
  StartHaproxy();
  const std::string map_path = dir_.File("hosts.map");
  // Root (CI) gives the file to another owner and group; otherwise our own uid and gid.
  uid_t uid = ::geteuid() == 0 ? 4321 : ::geteuid();
  gid_t gid = ::geteuid() == 0 ? 8765 : ::getegid();
  ASSERT_EQ(::chown(map_path.c_str(), uid, gid), 0);
  ASSERT_EQ(::chmod(map_path.c_str(), 0640), 0);
  StartHawk();
  int old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state?timeoutMs=30000", BigState("v1", 1, 10)).status, 200);
  ASSERT_EQ(hawk_->Patch("/v1/state", EntryPatch(2, "fresh.example.com", "be_fresh")).status, 200);

  HttpResult reload;
  int new_worker = 0;
  uint64_t lines = LinesDuring([&] {
    reload = hawk_->Post("/v1/reload", "");
    ASSERT_EQ(reload.status, 200) << reload.body;
    size_t at = reload.body.find("\"newWorkerPid\":");
    ASSERT_NE(at, std::string::npos) << reload.body;
    size_t digits = at + std::string("\"newWorkerPid\":").size();
    ASSERT_TRUE(absl::SimpleAtoi(
        reload.body.substr(digits, reload.body.find_first_of(",}", digits) - digits), &new_worker))
        << reload.body;
    ASSERT_NE(new_worker, old_worker);
    ASSERT_TRUE(WaitUntil(
        [&] {
          WorkersView view = hawk_->Workers();
          const WorkerView* w = view.Find(new_worker);
          return w != nullptr && w->in_sync && w->applied_version == "v1";
        },
        seconds(30)))
        << hawk_->Workers().raw;
  });
  EXPECT_THAT(reload.body, ::testing::HasSubstr("map and ACL files: 1 written (100001 entries)"));
  EXPECT_LT(lines, 200u) << reload.body << hawk_->LogTail()
                         << "the reload and the new worker's seed sent " << lines
                         << " lines to the master (the map alone is 100,001)";
  std::vector<std::string> held = Map(new_worker);
  EXPECT_EQ(held.size(), static_cast<size_t>(kMapEntries + 1));
  EXPECT_TRUE(std::binary_search(held.begin(), held.end(), "fresh.example.com be_fresh"));
  EXPECT_TRUE(std::binary_search(held.begin(), held.end(), "host7.example.com be_0"));

  struct stat st {};
  ASSERT_EQ(::stat(map_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_gid, gid);

  // Nothing changed since: the next reload does not write the file again, and the worker it
  // starts holds the map all the same.
  HttpResult again;
  lines = LinesDuring([&] {
    again = hawk_->Post("/v1/reload", "");
    ASSERT_EQ(again.status, 200) << again.body;
    // Every listed worker (the new one, and the old one until it exits) holds v1.
    ASSERT_TRUE(WaitUntil(
        [&] {
          WorkersView view = hawk_->Workers();
          std::vector<int> current = view.PidsWithRole("CURRENT");
          if (current.size() != 1 || current[0] == new_worker) return false;
          const WorkerView* w = view.Find(current[0]);
          return w != nullptr && w->in_sync && w->applied_version == "v1";
        },
        seconds(30)))
        << hawk_->Workers().raw;
  });
  EXPECT_LT(lines, 200u) << again.body;
  EXPECT_THAT(again.body, ::testing::HasSubstr("0 written (0 entries)")) << again.body;
  EXPECT_THAT(again.body, ::testing::HasSubstr("1 unchanged since hawk wrote them"));
  struct stat st_again {};
  ASSERT_EQ(::stat(map_path.c_str(), &st_again), 0);
  EXPECT_EQ(st_again.st_ino, st.st_ino);
  // One entry changed: written again.
  ASSERT_EQ(hawk_->Patch("/v1/state", EntryPatch(3, "fresh.example.com", "be_fresher")).status,
            200);
  HttpResult third = hawk_->Post("/v1/reload", "");
  ASSERT_EQ(third.status, 200) << third.body;
  EXPECT_THAT(third.body, ::testing::HasSubstr("1 written (100001 entries)")) << third.body;
  EXPECT_NE(ReadFile(map_path).find("fresh.example.com be_fresher\n"), std::string::npos);
}

// The change commands (`set`, `add`, `del`, `prepare`, `commit`) hawk sent to worker `pid`
// through the relay after `mark` (an earlier Transcripts()), each as the worker reads it: its
// words joined by spaces, then " <<\n" and the payload when it has one.
std::vector<std::string> ChangesSentSince(const UnixRelay& relay,
                                          const std::vector<std::string>& mark, int pid,
                                          const HaproxyVersion& version) {
  // k3_4 reads `@@` lines, which 3.2 and 3.3 take too; their 7-byte payload terminators do not
  // matter here (hawk sends none).
  CliVersion cli = version.AtLeast(3, 2)   ? CliVersion::k3_4
                   : version.AtLeast(3, 0) ? CliVersion::k3_0
                                           : CliVersion::k2_6;
  std::vector<std::string> sent;
  std::vector<std::string> now = relay.Transcripts();
  for (size_t i = 0; i < now.size(); ++i) {
    size_t from = i < mark.size() ? mark[i].size() : 0;
    ReadResult read = ReadMasterConnection(absl::string_view(now[i]).substr(from), cli);
    EXPECT_TRUE(read.ok()) << read.error;
    for (const ReadCommand& command : read.commands) {
      if (command.pid != pid || command.words.empty() || command.words[0] == "show") continue;
      std::string text = absl::StrJoin(command.words, " ");
      if (command.has_payload) absl::StrAppend(&text, " <<\n", command.payload);
      sent.push_back(std::move(text));
    }
  }
  return sent;
}

// A dry run's commands for one worker.
std::vector<std::string> Commands(simdjson::dom::element worker) {
  std::vector<std::string> out;
  simdjson::dom::array commands;
  EXPECT_EQ(worker["commands"].get(commands), simdjson::SUCCESS);
  for (simdjson::dom::element c : commands) {
    std::string_view text;
    EXPECT_EQ(c.get(text), simdjson::SUCCESS);
    out.emplace_back(text);
  }
  return out;
}

// Every file under `dir` with its size and modification time.
std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0) continue;
    out.push_back(absl::StrCat(entry.path().string(), " ", st.st_size, " ", st.st_mtim.tv_sec, ".",
                               st.st_mtim.tv_nsec));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(DeltaTest, ADryRunChangesNothingAndListsExactlyWhatThePushThenSends) {
  StartHaproxy();
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  auto state = [&](const std::string& version, int generation, int weight,
                   const std::string& entries) {
    return absl::StrCat(
        R"({"version":")", version, R"(","generation":)", generation,
        R"(,"backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"127.0.0.1","port":)",
        backend_->port(), R"(,"weight":)", weight, R"(}]}],"maps":[{"name":")",
        dir_.File("hosts.map"), R"(","entries":[)", entries, "]}]}");
  };
  ASSERT_EQ(hawk_->Put("/v1/state", state("v1", 1, 10, R"({"key":"a","value":"be_a"})")).status,
            200);
  std::string held = hawk_->Get("/v1/state").body;
  std::vector<std::string> files = Listing(dir_.File("state"));
  std::vector<std::string> mark = relay_->Transcripts();

  // Three objects change: a weight, an entry's value, a new entry.
  std::string next =
      state("v2", 2, 20, R"({"key":"a","value":"be_b"},{"key":"new","value":"be_new"})");
  HttpResult dry = hawk_->Put("/v1/state?dryRun=true", next);
  ASSERT_EQ(dry.status, 200) << dry.body;
  simdjson::dom::parser parser;
  simdjson::dom::element answer = parser.parse(dry.body);
  EXPECT_TRUE(answer["dryRun"].get_bool().value());
  EXPECT_EQ(std::string_view(answer["version"].get_string().value()), "v2");
  simdjson::dom::array workers = answer["workers"].get_array().value();
  ASSERT_EQ(workers.size(), 1u) << dry.body;
  simdjson::dom::element only = workers.at(0).value();
  EXPECT_EQ(only["pid"].get_int64().value(), worker);
  EXPECT_EQ(std::string_view(only["basis"].get_string().value()), "INCREMENTAL");
  std::vector<std::string> previewed = Commands(only);
  EXPECT_EQ(previewed.size(), 3u) << dry.body;

  // Nothing changed: not the state held, not the state directory, not the worker, and nothing
  // was sent.
  EXPECT_EQ(hawk_->Get("/v1/state").body, held);
  EXPECT_EQ(Listing(dir_.File("state")), files);
  EXPECT_EQ(ReadServerRow(haproxy_->master_socket(), worker, "be_app", "SRV_1").weight, 10);
  EXPECT_THAT(ChangesSentSince(*relay_, mark, worker, haproxy_->version()), ::testing::IsEmpty());

  // The same refusals as the push: an older generation, a bad parameter.
  HttpResult older = hawk_->Put("/v1/state?dryRun=true", state("v0", 0, 5, ""));
  EXPECT_EQ(older.status, 409) << older.body;
  HttpResult bad = hawk_->Put("/v1/state?dryRun=yes", next);
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_THAT(bad.body, ::testing::HasSubstr("dryRun"));

  // The real push (its generation was not consumed) sends exactly what the dry run listed.
  HttpResult put = hawk_->Put("/v1/state", next);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_NE(put.body.find("\"APPLIED\""), std::string::npos) << put.body;
  EXPECT_EQ(ChangesSentSince(*relay_, mark, worker, haproxy_->version()), previewed);
  EXPECT_EQ(ReadServerRow(haproxy_->master_socket(), worker, "be_app", "SRV_1").weight, 20);

  // A PATCH dry run, then the PATCH.
  mark = relay_->Transcripts();
  std::string patch = absl::StrCat(R"({"generation":3,"remove":{"maps":[{"name":")",
                                   dir_.File("hosts.map"), R"(","keys":["new"]}]}})");
  HttpResult dry_patch = hawk_->Patch("/v1/state?dryRun=true", patch);
  ASSERT_EQ(dry_patch.status, 200) << dry_patch.body;
  simdjson::dom::element patch_answer = parser.parse(dry_patch.body);
  previewed = Commands(patch_answer["workers"].at(0).value());
  EXPECT_EQ(previewed.size(), 1u) << dry_patch.body;
  ASSERT_EQ(hawk_->Patch("/v1/state", patch).status, 200);
  EXPECT_EQ(ChangesSentSince(*relay_, mark, worker, haproxy_->version()), previewed);
}

}  // namespace
}  // namespace hawk::testing
