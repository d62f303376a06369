#include "tests/support/test_pki.h"

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tests/support/subprocess.h"

namespace hawk::testing {
namespace {

constexpr absl::string_view kOpensslConfig = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectAltName = DNS:controller.hawk.test,URI:spiffe://hawk.test/controller
[stranger]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectAltName = DNS:stranger.hawk.test,URI:spiffe://hawk.test/stranger
)";

// Runs a command to completion (for `openssl`, which needs no loop); false with its output in
// `*output` if it fails.
bool RunToCompletion(const std::vector<std::string>& argv, const std::string& log,
                     std::string* output) {
  SubprocessOptions options;
  options.argv = argv;
  options.stdout_path = log;
  options.stderr_path = log;
  std::string error;
  std::unique_ptr<Subprocess> process = Subprocess::Spawn(options, &error);
  if (process == nullptr) {
    *output = error;
    return false;
  }
  bool ok = process->WaitExit(std::chrono::seconds(20)) && process->exit_code() == 0;
  if (!ok) *output = absl::StrCat(absl::StrJoin(argv, " "), ": ", ReadFile(log));
  return ok;
}

}  // namespace

const Pki& Pki::Get() {
  static const Pki pki;  // its directory goes when the test binary exits
  return pki;
}

Pki::Pki() {
  std::string config = dir_.File("openssl.cnf");
  std::ofstream(config) << kOpensslConfig;
  std::string log = dir_.File("openssl.log");
  auto key = [&](const std::string& name) {
    return std::vector<std::string>{"-newkey",
                                    "ec",
                                    "-pkeyopt",
                                    "ec_paramgen_curve:P-256",
                                    "-nodes",
                                    "-keyout",
                                    dir_.File(name + ".key")};
  };
  auto ca = [&](const std::string& name) {
    std::vector<std::string> argv = {
        "openssl", "req", "-x509", "-config",     config, "-extensions",           "ca",
        "-days",   "2",   "-subj", "/CN=" + name, "-out", dir_.File(name + ".pem")};
    for (const std::string& arg : key(name)) argv.push_back(arg);
    return RunToCompletion(argv, log, &error_);
  };
  auto leaf = [&](const std::string& name, const std::string& issuer, const std::string& extensions,
                  const std::string& serial) {
    std::vector<std::string> request = {"openssl",     "req",  "-new",
                                        "-config",     config, "-subj",
                                        "/CN=" + name, "-out", dir_.File(name + ".csr")};
    for (const std::string& arg : key(name)) request.push_back(arg);
    return RunToCompletion(request, log, &error_) &&
           RunToCompletion({"openssl", "x509", "-req", "-in", dir_.File(name + ".csr"), "-CA",
                            dir_.File(issuer + ".pem"), "-CAkey", dir_.File(issuer + ".key"),
                            "-set_serial", serial, "-days", "2", "-extfile", config, "-extensions",
                            extensions, "-out", dir_.File(name + ".pem")},
                           log, &error_);
  };
  bool ok = ca("hawk-ca") && leaf("hawk-a", "hawk-ca", "server", "1001") &&
            leaf("hawk-b", "hawk-ca", "server", "1002") &&
            leaf("controller", "hawk-ca", "client", "2001") &&
            leaf("stranger", "hawk-ca", "stranger", "2002") && ca("rogue-ca") &&
            leaf("rogue", "rogue-ca", "client", "3001");
  if (!ok && error_.empty()) error_ = "openssl failed";
}

}  // namespace hawk::testing
