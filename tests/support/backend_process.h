#pragma once

// BackendProcess: one hawk_test_backend (the binary named by $HAWK_TEST_BACKEND, which
// tests/CMakeLists.txt sets for every test) listening on 127.0.0.1. Its stdout (the
// "listening on" line and one "request METHOD TARGET" line per request) goes to
// <dir>/backend-<name>.log, which lets a test wait until a request has reached the backend.
//
// Ownership: owns the process; Stop() and the destructor terminate it. Not thread-safe.

#include <chrono>
#include <memory>
#include <string>

#include "tests/support/result.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hawk::testing {

// $HAWK_TEST_BACKEND, or "" when unset.
std::string TestBackendBinary();

class BackendProcess {
 public:
  BackendProcess(const TempDir& dir, std::string name, std::string binary = TestBackendBinary());
  ~BackendProcess();
  BackendProcess(const BackendProcess&) = delete;
  BackendProcess& operator=(const BackendProcess&) = delete;

  // Starts it on `port` (0: the backend picks a free one) and waits for "listening on".
  Result Start(int port = 0, std::chrono::milliseconds deadline = std::chrono::seconds(5));
  void Stop();

  const std::string& name() const { return name_; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  const std::string& log_path() const { return log_path_; }

  // Requests seen so far whose target is exactly `target`.
  int RequestCount(const std::string& target) const;
  // Waits until RequestCount(target) >= count.
  bool WaitForRequest(const std::string& target,
                      std::chrono::milliseconds deadline = std::chrono::seconds(5),
                      int count = 1) const;

 private:
  std::string name_;
  std::string binary_;
  std::string log_path_;
  int port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace hawk::testing
