#pragma once

// Throwaway certificates for TLS tests, made once per test binary with the `openssl` command line
// in a temp dir (removed when the binary exits). Files, each NAME.pem with its key NAME.key:
//   hawk-ca      a CA
//   hawk-a       a server certificate it signed (CN hawk-a, for 127.0.0.1 and localhost)
//   hawk-b       another one (CN hawk-b), for rotations
//   controller   a client certificate it signed (SAN DNS:controller.hawk.test and
//                URI:spiffe://hawk.test/controller)
//   stranger     another client certificate it signed (DNS:stranger.hawk.test,
//                URI:spiffe://hawk.test/stranger)
//   rogue-ca     an unrelated CA, and rogue, a client certificate it signed

#include <string>

#include "tests/support/temp_dir.h"

namespace hawk::testing {

class Pki {
 public:
  static const Pki& Get();

  std::string File(const std::string& name) const { return dir_.File(name); }
  // Why the certificates could not be made; "" when they were.
  const std::string& error() const { return error_; }

 private:
  Pki();

  TempDir dir_;
  std::string error_;
};

}  // namespace hawk::testing
