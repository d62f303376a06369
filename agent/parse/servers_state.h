#pragma once

// `show servers state [<backend>]` and the server-state-file format, which is the same text
// (HAProxy never writes the file; it is this output, saved):
//
//   1
//   # be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight …
//   5 be 1 s1 127.0.0.2 2 0 17 1 1 6 3 1 2 0 0 0 - 21211 - 0 0 - - 0
//
// The first line is the format version (only "1" exists). Columns are found by the names on the
// `# be_id …` line, so extra columns are tolerated; `-` means empty. The 25 columns are the same
// on 2.6, 3.0, 3.4 and 3.5-dev. The parser also reads files written by FormatServersStateFile.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

// srv_admin_state bits (SRV_ADMF_*). 0x40 is HMAINT on 2.6 and FQDN_CHANGED on 3.x.
inline constexpr int kAdminFMaint = 0x01;  // forced maintenance (`state maint`, `disabled`)
inline constexpr int kAdminIMaint = 0x02;  // inherited from a tracked server
// The config said `disabled`. Stays set after `state ready` (op_state 2 with admin 4 in the
// old_worker fixtures of every version), so it is not part of kAdminMaintMask, as in HAProxy's
// SRV_ADMF_MAINT.
inline constexpr int kAdminCMaint = 0x04;
inline constexpr int kAdminFDrain = 0x08;  // forced drain (`state drain`)
inline constexpr int kAdminIDrain = 0x10;  // inherited drain
inline constexpr int kAdminRMaint = 0x20;  // maintenance from a DNS resolution failure
// SRV_ADMF_MAINT (0x23): the bits that really hold a server in maintenance.
inline constexpr int kAdminMaintMask = kAdminFMaint | kAdminIMaint | kAdminRMaint;
inline constexpr int kAdminDrainMask = kAdminFDrain | kAdminIDrain;

// srv_op_state values (SRV_ST_*).
inline constexpr int kOpStopped = 0;
inline constexpr int kOpStarting = 1;
inline constexpr int kOpRunning = 2;
inline constexpr int kOpStopping = 3;

// srv_check_state / srv_agent_state bits (CHK_ST_*; 2.6 may print extra internal bits).
inline constexpr int kCheckInProgress = 0x01;
inline constexpr int kCheckConfigured = 0x02;
inline constexpr int kCheckEnabled = 0x04;
inline constexpr int kCheckPaused = 0x08;
inline constexpr int kCheckAgent = 0x10;

// The 25 standard columns, in HAProxy's order.
inline constexpr size_t kServersStateColumnCount = 25;
inline constexpr absl::string_view kServersStateColumns[kServersStateColumnCount] = {
    "be_id",
    "be_name",
    "srv_id",
    "srv_name",
    "srv_addr",
    "srv_op_state",
    "srv_admin_state",
    "srv_uweight",
    "srv_iweight",
    "srv_time_since_last_change",
    "srv_check_status",
    "srv_check_result",
    "srv_check_health",
    "srv_check_state",
    "srv_agent_state",
    "bk_f_forced_id",
    "srv_f_forced_id",
    "srv_fqdn",
    "srv_port",
    "srvrecord",
    "srv_use_ssl",
    "srv_check_port",
    "srv_check_addr",
    "srv_agent_addr",
    "srv_agent_port",
};

struct ServerStateRow {
  int backend_id = 0;                     // be_id
  std::string backend;                    // be_name
  int server_id = 0;                      // srv_id
  std::string server;                     // srv_name
  std::string address;                    // srv_addr ("" for "-")
  int op_state = 0;                       // srv_op_state (kOp*)
  int admin_state = 0;                    // srv_admin_state (kAdmin* bits)
  int user_weight = 0;                    // srv_uweight: the runtime weight
  int initial_weight = 0;                 // srv_iweight: the configured weight
  int64_t seconds_since_last_change = 0;  // srv_time_since_last_change
  int check_status = 0;                   // srv_check_status
  int check_result = 0;                   // srv_check_result
  int check_health = 0;                   // srv_check_health
  int check_state = 0;                    // srv_check_state (kCheck* bits)
  int agent_state = 0;                    // srv_agent_state (kCheck* bits)
  int backend_forced_id = 0;              // bk_f_forced_id
  int server_forced_id = 0;               // srv_f_forced_id
  std::string fqdn;                       // srv_fqdn ("" for "-")
  int port = 0;                           // srv_port
  std::string srv_record;                 // srvrecord ("" for "-")
  int use_ssl = 0;                        // srv_use_ssl
  int check_port = 0;                     // srv_check_port
  std::string check_addr;                 // srv_check_addr ("" for "-")
  std::string agent_addr;                 // srv_agent_addr ("" for "-")
  int agent_port = 0;                     // srv_agent_port
  // Every column of the row as printed, by header name, extra columns included.
  absl::flat_hash_map<std::string, std::string> columns;

  bool in_maintenance() const { return (admin_state & kAdminMaintMask) != 0; }
  bool draining() const { return (admin_state & kAdminDrainMask) != 0; }
};

// InvalidArgument when the version line is not "1", the `# be_id …` header is missing, lacks
// be_id/be_name/srv_id/srv_name/srv_addr/srv_op_state/srv_admin_state/srv_uweight/srv_iweight or
// repeats a name, or a row has the wrong number of fields or a malformed number. Standard
// columns absent from the header keep their defaults. Other `#` lines after the header are
// comments. No rows is fine (a backend without servers).
absl::StatusOr<std::vector<ServerStateRow>> ParseServersState(absl::string_view reply);

// The same checks, one row at a time into one reused row, and without `columns` (10,000 servers
// are observed on every resync; the column map would cost more than the rest).
absl::Status ForEachServerState(absl::string_view reply,
                                const std::function<void(const ServerStateRow&)>& on_row);

// The server-state-file text for `rows`: "1", the `# be_id …` header of the 25 standard
// columns, then one line per row from the typed fields ("-" for empty strings; extra columns are
// not written). Backend and server names are written as they are, so they must be valid HAProxy
// names (as any row from ParseServersState is). ParseServersState reads the result back to the
// same typed fields.
std::string FormatServersStateFile(const std::vector<ServerStateRow>& rows);

}  // namespace hawk::parse
