#include "tests/support/backend_process.h"

#include <cstdlib>
#include <sstream>
#include <utility>

#include "tests/support/wait_until.h"

namespace hawk::testing {

std::string TestBackendBinary() {
  const char* path = std::getenv("HAWK_TEST_BACKEND");
  return path == nullptr ? "" : path;
}

BackendProcess::BackendProcess(const TempDir& dir, std::string name, std::string binary)
    : name_(std::move(name)),
      binary_(std::move(binary)),
      log_path_(dir.File("backend-" + name_ + ".log")) {}

BackendProcess::~BackendProcess() { Stop(); }

Result BackendProcess::Start(int port, std::chrono::milliseconds deadline) {
  if (process_) return Result::Error("BackendProcess: already started");
  if (binary_.empty()) return Result::Error("BackendProcess: HAWK_TEST_BACKEND is not set");
  SubprocessOptions options;
  options.argv = {binary_, "--listen", "127.0.0.1:" + std::to_string(port), "--name", name_};
  options.stdout_path = log_path_;
  options.stderr_path = log_path_;
  std::string error;
  process_ = Subprocess::Spawn(std::move(options), &error);
  if (!process_) return Result::Error(error);
  const std::string marker = "listening on 127.0.0.1:";
  bool ready = WaitUntil(
      [&] {
        std::string log = ReadFile(log_path_);
        auto at = log.find(marker);
        if (at == std::string::npos || log.find('\n', at) == std::string::npos) {
          return !process_->Running();
        }
        port_ = std::atoi(log.c_str() + at + marker.size());
        return true;
      },
      deadline);
  if (ready && port_ > 0) return Result::Ok();
  std::string message = "backend " + name_ + " did not start (" + process_->DescribeExit() +
                        "): " + ReadFile(log_path_);
  Stop();
  return Result::Error(message);
}

void BackendProcess::Stop() {
  if (process_) process_->Stop();
}

int BackendProcess::RequestCount(const std::string& target) const {
  std::istringstream lines(ReadFile(log_path_));
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string tag, method, seen;
    if (words >> tag >> method >> seen && tag == "request" && seen == target) ++count;
  }
  return count;
}

bool BackendProcess::WaitForRequest(const std::string& target, std::chrono::milliseconds deadline,
                                    int count) const {
  return WaitUntil([&] { return RequestCount(target) >= count; }, deadline);
}

}  // namespace hawk::testing
