#pragma once

// ServerContext: the TLS server configuration of one or more listeners (OpenSSL), built from three
// PEM files, and re-read when they change on disk.
//
// TLS 1.3 only. With a client CA bundle every client must present a certificate that chains to
// it (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT), so a client without one never gets past
// the handshake. No session tickets and no session cache: every connection does a full handshake
// and proves its certificate again; an API that sees a handful of controller connections has no
// use for resumption, and nothing outlives a certificate rotation.
//
// Client allow-list (--tls-client-allow): with one, a client certificate the CA signed must also
// name one of the allowed identities among its subjectAltNames, a DNS name (compared without
// regard to case) or a URI (compared exactly, e.g. a SPIFFE ID); the subject's CN is not looked
// at. A certificate that names none fails the handshake with a bad_certificate alert, and the
// rate-limited failure log says which names it carried.
//
// Rotation (a Kubernetes Secret mounted as a volume: kubelet writes the new files into a new
// directory and swaps a `..data` symlink, atomically): NewSession() stats the three paths
// (following symlinks) at most once per `recheck_interval`, and when any file's device, inode,
// size or mtime changed, loads them into a new SSL_CTX. Sessions already open keep the context
// they started with (each SSL holds a reference to its SSL_CTX). If the new files do not load
// (a half-written update, a key that does not match its certificate), the previous certificates
// stay in service and one warning is logged per change.
//
// Threading: single-threaded (the loop thread). Ownership: owns the current SSL_CTX; the SSLs it
// hands out are owned by the caller.

#include <openssl/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hawk::tls {

struct ServerFiles {
  std::string cert;       // --tls-cert: PEM, the server's certificate, then its chain
  std::string key;        // --tls-key: PEM, the certificate's private key, unencrypted
  std::string client_ca;  // --tls-client-ca: PEM bundle; empty: no client certificate asked
};

// The subjectAltNames of a client certificate that the allow-list looks at.
struct ClientIdentity {
  std::vector<std::string> dns;
  std::vector<std::string> uris;
};

// Checks one --tls-client-allow entry and returns it as it is compared: a URI (it has "://")
// as given, a DNS name in lowercase without a trailing dot. Errors name the flag.
absl::StatusOr<std::string> ParseClientAllow(absl::string_view entry);
// Whether `identity` names one of `allow` (entries from ParseClientAllow).
bool IdentityAllowed(const std::vector<std::string>& allow, const ClientIdentity& identity);
// "DNS:a.example, URI:spiffe://x/y": what the allow-list refused in the handshake of `ssl`, or
// "" if it refused nothing.
std::string RejectedClientNames(const SSL* ssl);

struct SslDeleter {
  void operator()(SSL* ssl) const;
};
// Frees the SSL (and its BIOs); see LiveSessions().
using SslPtr = std::unique_ptr<SSL, SslDeleter>;

// SSL objects NewSession() has made that are not yet freed, over every ServerContext: a leak
// check for tests.
size_t LiveSessions();

class ServerContext {
 public:
  // Loads the files. Errors (InvalidArgument) name the flag, the file and what is wrong with it:
  // "--tls-key /x/key.pem: no such file", "--tls-cert /a.pem and --tls-key /b.pem do not match".
  // `client_allow`: --tls-client-allow, the client identities let in (ParseClientAllow); empty:
  // any certificate of the client CA.
  static absl::StatusOr<std::unique_ptr<ServerContext>> Create(
      ServerFiles files, absl::Duration recheck_interval = absl::Seconds(1),
      std::vector<std::string> client_allow = {});
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  // A server-side SSL for one new connection, from the current certificates (re-read first if
  // the files changed; `now_ms` is a monotonic clock in milliseconds, such as uv_now()).
  // Null only if OpenSSL cannot allocate one.
  SslPtr NewSession(uint64_t now_ms);

  // Whether a failed handshake may be logged now: at most one line per minute, so that a
  // thousand hostile or broken clients make one line, not a thousand. On true, `*suppressed` is
  // the number of failures held back since the last line.
  bool AllowFailureLog(uint64_t now_ms, uint64_t* suppressed);

  const ServerFiles& files() const { return files_; }
  // 1 after Create(), one more for each rotation that loaded.
  uint64_t generation() const { return generation_; }

 private:
  // What stat() says about a file; a change in any field means the file was replaced.
  struct FileId {
    int error = 0;  // errno of a failed stat, else 0
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    friend bool operator==(const FileId&, const FileId&) = default;
  };
  struct CtxDeleter {
    void operator()(SSL_CTX* ctx) const;
  };
  using CtxPtr = std::unique_ptr<SSL_CTX, CtxDeleter>;

  ServerContext(ServerFiles files, absl::Duration recheck_interval,
                std::vector<std::string> client_allow);
  std::vector<FileId> Identify() const;
  // `client_allow` is the context's own (client_allow_): the SSL_CTX points to it.
  static absl::StatusOr<CtxPtr> Load(const ServerFiles& files,
                                     const std::vector<std::string>& client_allow);
  // The handshake's certificate check, with the allow-list.
  static int VerifyClient(int preverified, X509_STORE_CTX* store);
  void MaybeReload(uint64_t now_ms);

  const ServerFiles files_;
  const std::vector<std::string> client_allow_;
  const uint64_t recheck_interval_ms_;
  CtxPtr ctx_;
  std::vector<FileId> seen_;    // the files as last examined (loaded or not)
  uint64_t next_check_ms_ = 0;  // NewSession() stats nothing before
  uint64_t generation_ = 0;
  uint64_t failure_log_after_ms_ = 0;  // next allowed failure log line
  uint64_t failures_suppressed_ = 0;
};

}  // namespace hawk::tls
