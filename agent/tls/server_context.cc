#include "agent/tls/server_context.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/base/log.h"
#include "agent/base/status_macros.h"

namespace hawk::tls {
namespace {

constexpr size_t kMaxPemBytes = 4 * 1024 * 1024;  // a big CA bundle is ~200 KiB
constexpr uint64_t kFailureLogIntervalMs = 60 * 1000;

size_t live_sessions = 0;  // loop thread only

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Deleter {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* pkey) const { EVP_PKEY_free(pkey); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

// The reason of OpenSSL's most recent error ("ee key too small"), and the queue cleared.
std::string OpenSslReason() {
  unsigned long error = ERR_peek_last_error();
  const char* reason = error != 0 ? ERR_reason_error_string(error) : nullptr;
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

// Never asks for a passphrase: OpenSSL would otherwise prompt on the terminal.
int NoPassphrase(char*, int, int, void*) { return -1; }

absl::Status FileError(absl::string_view flag, const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": ", what));
}

std::string ErrnoText(int error) {
  switch (error) {
    case ENOENT:
      return "no such file";
    case EACCES:
      return "permission denied";
    case EISDIR:
      return "is a directory, not a PEM file";
    default:
      return std::strerror(error);
  }
}

absl::StatusOr<std::string> ReadPemFile(absl::string_view flag, const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": no file given"));
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError(flag, path, ErrnoText(errno));
  std::string text;
  char buffer[16 * 1024];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return FileError(flag, path, ErrnoText(error));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxPemBytes) {
      close(fd);
      return FileError(flag, path, "larger than 4 MiB; not a PEM file");
    }
  }
  close(fd);
  if (text.empty()) return FileError(flag, path, "empty file");
  return text;
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// After a loop of PEM_read_bio_X509 calls: the end of the file is the expected way out; anything
// else is a broken PEM block.
absl::Status CheckPemEnd(absl::string_view flag, const std::string& path) {
  unsigned long error = ERR_peek_last_error();
  if (error == 0 ||
      (ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE)) {
    ERR_clear_error();
    return absl::OkStatus();
  }
  return FileError(flag, path, absl::StrCat("a broken PEM certificate: ", OpenSslReason()));
}

// HTTP/1.1 is what the server speaks: select it when the client offers it (curl offers h2 first);
// without a match, proceed without ALPN rather than fail.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
               unsigned int in_length, void*) {
  constexpr absl::string_view kHttp11 = "http/1.1";
  for (unsigned int i = 0; i < in_length;) {
    unsigned int length = in[i];
    if (i + 1 + length > in_length) break;
    if (absl::string_view(reinterpret_cast<const char*>(in + i + 1), length) == kHttp11) {
      *out = in + i + 1;
      *out_length = static_cast<unsigned char>(length);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + length;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// "CN=hawk, valid until Jun  1 12:00:00 2027 GMT", for the log.
std::string Describe(SSL_CTX* ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (cert == nullptr || bio == nullptr) return "(none)";
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  BIO_puts(bio.get(), ", valid until ");
  ASN1_TIME_print(bio.get(), X509_get0_notAfter(cert));
  char* data = nullptr;
  long length = BIO_get_mem_data(bio.get(), &data);
  std::string text(data, static_cast<size_t>(length > 0 ? length : 0));
  ERR_clear_error();
  return text;
}

// SSL_CTX ex_data: the allow-list of the ServerContext that made the SSL_CTX. A ServerContext
// outlives every SSL_CTX it makes: each session's ServerStream holds the context.
int AllowListIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// SSL ex_data: what a certificate the allow-list refused was named, freed with the SSL.
void FreeNames(void*, void* names, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(names);
}
int RejectedNamesIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &FreeNames);
  return index;
}

// A DNS name as compared: lowercase, without one trailing dot.
std::string NormalizeDnsName(absl::string_view name) {
  if (absl::EndsWith(name, ".")) name.remove_suffix(1);
  return absl::AsciiStrToLower(name);
}

ClientIdentity IdentityOf(X509* cert) {
  ClientIdentity identity;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return identity;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_DNS && name->type != GEN_URI) continue;
    const ASN1_IA5STRING* text = name->d.ia5;  // dNSName and uniformResourceIdentifier alike
    // Bytes as they are, NULs included: such a name matches no entry.
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                      static_cast<size_t>(std::max(ASN1_STRING_length(text), 0)));
    (name->type == GEN_DNS ? identity.dns : identity.uris).push_back(std::move(value));
  }
  GENERAL_NAMES_free(names);
  return identity;
}

// "DNS:a, URI:b" for the log; bytes outside printable ASCII shown as '?', at most 8 names.
std::string DescribeNames(const ClientIdentity& identity) {
  std::vector<std::string> parts;
  auto add = [&](absl::string_view kind, const std::string& value) {
    if (parts.size() == 8) return;
    std::string shown(value.substr(0, 128));
    for (char& c : shown) {
      if (c < ' ' || c > '~') c = '?';
    }
    parts.push_back(absl::StrCat(kind, ":", shown));
  };
  for (const std::string& name : identity.dns) add("DNS", name);
  for (const std::string& uri : identity.uris) add("URI", uri);
  if (parts.empty()) return "no DNS or URI subjectAltName";
  return absl::StrJoin(parts, ", ");
}

}  // namespace

absl::StatusOr<std::string> ParseClientAllow(absl::string_view entry) {
  if (entry.empty()) return absl::InvalidArgumentError("--tls-client-allow: an empty identity");
  for (char c : entry) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-client-allow \"", absl::CEscape(entry),
                       "\": blanks and non-ASCII bytes are not allowed"));
    }
  }
  if (absl::StrContains(entry, "://")) return std::string(entry);  // a URI, compared exactly
  for (char c : entry) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tls-client-allow ", entry,
          ": not a DNS name (letters, digits, '.', '-') nor a URI (scheme://…); wildcards are not "
          "supported"));
    }
  }
  return NormalizeDnsName(entry);
}

bool IdentityAllowed(const std::vector<std::string>& allow, const ClientIdentity& identity) {
  for (const std::string& entry : allow) {
    if (absl::StrContains(entry, "://")) {
      for (const std::string& uri : identity.uris) {
        if (uri == entry) return true;
      }
      continue;
    }
    for (const std::string& dns : identity.dns) {
      if (NormalizeDnsName(dns) == entry) return true;
    }
  }
  return false;
}

std::string RejectedClientNames(const SSL* ssl) {
  const auto* names = static_cast<const std::string*>(SSL_get_ex_data(ssl, RejectedNamesIndex()));
  return names != nullptr ? *names : "";
}

int ServerContext::VerifyClient(int preverified, X509_STORE_CTX* store) {
  if (preverified != 1) return 0;  // the chain does not verify: OpenSSL's reason stands
  if (X509_STORE_CTX_get_error_depth(store) != 0) return 1;  // a CA: the names are the leaf's
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (ssl == nullptr) return 0;
  const auto* allow = static_cast<const std::vector<std::string>*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), AllowListIndex()));
  if (allow == nullptr || allow->empty()) return 1;
  ClientIdentity identity = IdentityOf(X509_STORE_CTX_get_current_cert(store));
  if (IdentityAllowed(*allow, identity)) return 1;
  delete static_cast<std::string*>(SSL_get_ex_data(ssl, RejectedNamesIndex()));
  SSL_set_ex_data(ssl, RejectedNamesIndex(), new std::string(DescribeNames(identity)));
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

void SslDeleter::operator()(SSL* ssl) const {
  SSL_free(ssl);
  --live_sessions;
}

size_t LiveSessions() { return live_sessions; }

void ServerContext::CtxDeleter::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

ServerContext::ServerContext(ServerFiles files, absl::Duration recheck_interval,
                             std::vector<std::string> client_allow)
    : files_(std::move(files)),
      client_allow_(std::move(client_allow)),
      recheck_interval_ms_(static_cast<uint64_t>(
          std::max<int64_t>(absl::ToInt64Milliseconds(recheck_interval), 0))) {}

ServerContext::~ServerContext() = default;

absl::StatusOr<std::unique_ptr<ServerContext>> ServerContext::Create(
    ServerFiles files, absl::Duration recheck_interval, std::vector<std::string> client_allow) {
  if (!client_allow.empty() && files.client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-allow needs --tls-client-ca: the identities are read from client "
        "certificates the CA signed");
  }
  std::unique_ptr<ServerContext> context(
      new ServerContext(std::move(files), recheck_interval, std::move(client_allow)));
  // Identified before they are read: a file replaced in between is taken as changed at the first
  // check and read again, never the other way round.
  context->seen_ = context->Identify();
  ASSIGN_OR_RETURN(context->ctx_, Load(context->files_, context->client_allow_));
  context->generation_ = 1;
  return context;
}

std::vector<ServerContext::FileId> ServerContext::Identify() const {
  std::vector<FileId> ids;
  for (const std::string* path : {&files_.cert, &files_.key, &files_.client_ca}) {
    FileId id;
    struct stat st {};
    if (path->empty()) {
      id.error = ENOENT;
    } else if (stat(path->c_str(), &st) != 0) {  // stat, not lstat: through the symlinks
      id.error = errno;
    } else {
      id.device = st.st_dev;
      id.inode = st.st_ino;
      id.size = st.st_size;
      id.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    }
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<ServerContext::CtxPtr> ServerContext::Load(
    const ServerFiles& files, const std::vector<std::string>& client_allow) {
  ERR_clear_error();
  ASSIGN_OR_RETURN(std::string cert_pem, ReadPemFile("--tls-cert", files.cert));
  ASSIGN_OR_RETURN(std::string key_pem, ReadPemFile("--tls-key", files.key));
  std::string ca_pem;
  if (!files.client_ca.empty()) {
    ASSIGN_OR_RETURN(ca_pem, ReadPemFile("--tls-client-ca", files.client_ca));
  }

  CtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("TLS: ", OpenSslReason()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  // Idle keep-alive connections give their read and write buffers back.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx.get(), &SelectAlpn, nullptr);

  // The certificate, then its chain.
  BioPtr cert_bio = MemoryBio(cert_pem);
  X509Ptr leaf(PEM_read_bio_X509_AUX(cert_bio.get(), nullptr, &NoPassphrase, nullptr));
  if (leaf == nullptr) {
    ERR_clear_error();
    return FileError("--tls-cert", files.cert, "no PEM certificate in the file");
  }
  if (SSL_CTX_use_certificate(ctx.get(), leaf.get()) != 1) {
    return FileError("--tls-cert", files.cert, OpenSslReason());
  }
  while (X509Ptr extra{PEM_read_bio_X509(cert_bio.get(), nullptr, &NoPassphrase, nullptr)}) {
    if (SSL_CTX_add1_chain_cert(ctx.get(), extra.get()) != 1) {
      return FileError("--tls-cert", files.cert, OpenSslReason());
    }
  }
  RETURN_IF_ERROR(CheckPemEnd("--tls-cert", files.cert));

  // The key.
  if (absl::StrContains(key_pem, "ENCRYPTED")) {
    return FileError("--tls-key", files.key,
                     "the key is encrypted; hawk reads unencrypted keys only");
  }
  BioPtr key_bio = MemoryBio(key_pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, &NoPassphrase, nullptr));
  if (key == nullptr) {
    ERR_clear_error();
    return FileError("--tls-key", files.key, "no PEM private key in the file");
  }
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls-cert ", files.cert, " and --tls-key ",
                                                   files.key,
                                                   " do not match: the key is not the "
                                                   "certificate's"));
  }
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) {
    return FileError("--tls-key", files.key, OpenSslReason());
  }

  // The client CAs: trusted for verifying clients, and named to them in the CertificateRequest.
  if (!ca_pem.empty()) {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    BioPtr ca_bio = MemoryBio(ca_pem);
    int count = 0;
    while (X509Ptr ca{PEM_read_bio_X509(ca_bio.get(), nullptr, &NoPassphrase, nullptr)}) {
      if (X509_STORE_add_cert(store, ca.get()) != 1 ||
          SSL_CTX_add_client_CA(ctx.get(), ca.get()) != 1) {
        return FileError("--tls-client-ca", files.client_ca, OpenSslReason());
      }
      ++count;
    }
    RETURN_IF_ERROR(CheckPemEnd("--tls-client-ca", files.client_ca));
    if (count == 0) {
      return FileError("--tls-client-ca", files.client_ca, "no PEM certificate in the file");
    }
    // The ServerContext's own list, which outlives the SSL_CTX.
    SSL_CTX_set_ex_data(ctx.get(), AllowListIndex(),
                        const_cast<std::vector<std::string>*>(&client_allow));
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       &ServerContext::VerifyClient);
  }
  ERR_clear_error();
  return ctx;
}

void ServerContext::MaybeReload(uint64_t now_ms) {
  // Rate-limited because this runs before every handshake: a flood of connections must not turn
  // into a flood of stat() calls on a volume, and a Secret rotation is propagated by kubelet
  // within a minute or so anyway: a second more is nothing.
  if (now_ms < next_check_ms_) return;
  next_check_ms_ = now_ms + recheck_interval_ms_;
  std::vector<FileId> ids = Identify();
  if (ids == seen_) return;
  seen_ = std::move(ids);  // a failed load warns once, then waits for the next change
  absl::StatusOr<CtxPtr> loaded = Load(files_, client_allow_);
  if (!loaded.ok()) {
    base::LogWarn(
        "tls: the certificate files changed but do not load; still serving the "
        "previous certificates: ",
        loaded.status().message());
    return;
  }
  ctx_ = *std::move(loaded);
  ++generation_;
  base::LogInfo("tls: certificate files changed; serving ", Describe(ctx_.get()));
}

SslPtr ServerContext::NewSession(uint64_t now_ms) {
  MaybeReload(now_ms);
  SslPtr ssl(SSL_new(ctx_.get()));
  if (ssl == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  ++live_sessions;  // the deleter counts down
  SSL_set_accept_state(ssl.get());
  return ssl;
}

bool ServerContext::AllowFailureLog(uint64_t now_ms, uint64_t* suppressed) {
  if (now_ms < failure_log_after_ms_) {
    ++failures_suppressed_;
    return false;
  }
  *suppressed = failures_suppressed_;
  failures_suppressed_ = 0;
  failure_log_after_ms_ = now_ms + kFailureLogIntervalMs;
  return true;
}

}  // namespace hawk::tls
