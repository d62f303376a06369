// Every parser of master and worker CLI replies, over any bytes: no crash, no read out of bounds
// (ASan), and the documented round trip of the server-state format holds.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/parse/haproxy_config.h"
#include "agent/parse/maps.h"
#include "agent/parse/reload.h"
#include "agent/parse/reply.h"
#include "agent/parse/servers_state.h"
#include "agent/parse/show_info.h"
#include "agent/parse/show_proc.h"
#include "agent/parse/show_sess.h"
#include "agent/parse/show_version.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace parse = hawk::parse;
  absl::string_view reply(reinterpret_cast<const char*>(data), size);
  (void)parse::ParseShowProc(reply);
  (void)parse::ParseShowInfo(reply);
  (void)parse::ParseShowSess(reply);
  (void)parse::ParseMapList(reply);
  (void)parse::ParseAclList(reply);
  (void)parse::ForEachMapEntry(reply, [](auto, auto, auto) {});
  (void)parse::ForEachAclEntry(reply, [](auto, auto) {});
  (void)parse::ParseReloadReply(reply);
  (void)parse::ParseVersionNumbers(reply);
  (void)parse::ParseNewVersion(reply);
  (void)parse::ClassifyMutationReply(reply);
  (void)parse::ClassifyMasterError(reply);
  (void)parse::AdviseOnConfig(reply);

  auto rows = parse::ParseServersState(reply);
  if (rows.ok()) {
    std::string file = parse::FormatServersStateFile(*rows);
    auto again = parse::ParseServersState(file);
    HAWK_FUZZ_CHECK(again.ok(), "the formatted server-state file does not parse");
    HAWK_FUZZ_CHECK(parse::FormatServersStateFile(*again) == file,
                    "the server-state file does not read back to the same rows");
  }
  return 0;
}
