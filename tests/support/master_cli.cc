#include "tests/support/master_cli.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "tests/support/socket_util.h"

namespace hawk::testing {

CliReply MasterCli::Run(const std::string& socket_path, const std::string& command,
                        std::chrono::milliseconds timeout) {
  CliReply reply;
  auto deadline = Clock::now() + timeout;
  UniqueFd fd = ConnectUnix(socket_path, deadline, &reply.error, &reply.error_number);
  if (!fd.valid()) return reply;
  if (!WriteAll(fd.get(), command + "\n", deadline, &reply.error)) return reply;
  if (::shutdown(fd.get(), SHUT_WR) != 0) {
    reply.error = ErrnoMessage("shutdown", errno);
    return reply;
  }
  char buffer[16384];
  while (true) {
    std::string error;
    ssize_t n = ReadSome(fd.get(), buffer, sizeof(buffer), deadline, &error);
    if (n > 0) {
      reply.text.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;
    // The master closing with a reset right after answering (2.6 after some errors) still
    // delivered the reply; only a timeout or a reset before any byte is a failure.
    if (error != "timeout" && !reply.text.empty()) break;
    reply.error = error;
    return reply;
  }
  reply.ok = true;
  return reply;
}

std::string MasterCli::Command(const std::string& socket_path, const std::string& command,
                               std::chrono::milliseconds timeout, std::string* error) {
  CliReply reply = Run(socket_path, command, timeout);
  if (!reply.ok) {
    if (error != nullptr) *error = reply.error;
    return "";
  }
  if (error != nullptr) error->clear();
  return reply.text;
}

std::optional<ProcList> MasterCli::ShowProc(const std::string& socket_path,
                                            std::chrono::milliseconds timeout, std::string* error) {
  CliReply reply = Run(socket_path, "show proc", timeout);
  if (!reply.ok) {
    if (error != nullptr) *error = reply.error;
    return std::nullopt;
  }
  return ParseShowProc(reply.text, error);
}

namespace {

bool ParseInt(const std::string& token, int* out) {
  if (token.empty()) return false;
  char* end = nullptr;
  long value = std::strtol(token.c_str(), &end, 10);
  if (*end != '\0' || value < 0 || value > 0x7fffffff) return false;
  *out = static_cast<int>(value);
  return true;
}

std::optional<ProcList> Fail(std::string* error, const std::string& message) {
  if (error != nullptr) *error = "show proc: " + message;
  return std::nullopt;
}

}  // namespace

std::optional<ProcList> ParseShowProc(const std::string& text, std::string* error) {
  enum class Section { kMaster, kWorkers, kOldWorkers, kPrograms, kUnknown };
  ProcList list;
  bool saw_master = false;
  Section section = Section::kMaster;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    if (tokens.empty()) continue;
    if (tokens[0].rfind("#<", 0) == 0) continue;  // the column header
    if (tokens[0] == "#") {
      std::string name;
      for (size_t i = 1; i < tokens.size(); ++i) name += (i > 1 ? " " : "") + tokens[i];
      if (name == "workers") {
        section = Section::kWorkers;
      } else if (name == "old workers") {
        section = Section::kOldWorkers;
      } else if (name == "programs" || name == "old programs") {
        section = Section::kPrograms;
      } else {
        section = Section::kUnknown;
      }
      continue;
    }
    int pid = 0;
    if (tokens.size() < 2 || !ParseInt(tokens[0], &pid)) {
      return Fail(error, "malformed row \"" + line + "\"");
    }
    if (tokens[1] == "master") {
      // pid master N [failed: M] uptime version
      if (tokens.size() < 3 || !ParseInt(tokens[2], &list.master_reloads)) {
        return Fail(error, "malformed master row \"" + line + "\"");
      }
      for (size_t i = 3; i < tokens.size(); ++i) {
        if (tokens[i].rfind("[failed:", 0) != 0) continue;
        std::string value = tokens[i].substr(8);
        if (value.empty() && i + 1 < tokens.size()) value = tokens[i + 1];
        if (!value.empty() && value.back() == ']') value.pop_back();
        if (!ParseInt(value, &list.master_failed)) {
          return Fail(error, "malformed [failed: N] in \"" + line + "\"");
        }
        break;
      }
      list.master_pid = pid;
      saw_master = true;
      continue;
    }
    switch (section) {
      case Section::kWorkers:
        list.workers.push_back(pid);
        break;
      case Section::kOldWorkers:
        list.old_workers.push_back(pid);
        break;
      case Section::kPrograms:
        list.programs.push_back(pid);
        break;
      case Section::kMaster:
      case Section::kUnknown:
        break;
    }
  }
  if (!saw_master) return Fail(error, "no master row in \"" + text + "\"");
  return list;
}

}  // namespace hawk::testing
