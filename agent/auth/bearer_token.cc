#include "agent/auth/bearer_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/base/unique_fd.h"

namespace hawk::auth {
namespace {

constexpr size_t kMaxTokenBytes = 4096;
// A token file is small; anything larger is not a token file.
constexpr size_t kMaxTokenFileBytes = 64 * 1024;

absl::Status TokenFileError(absl::string_view path, absl::string_view what, int error) {
  return absl::FailedPreconditionError(
      absl::StrCat("--token-file ", path, ": ", what, ": ", std::strerror(error)));
}

}  // namespace

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of the longer input is visited whatever the contents, and the loop accumulates
  // differences instead of returning at the first one.
  size_t length = a.size() > b.size() ? a.size() : b.size();
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < length; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned char>(x ^ y);
  }
  // volatile: keeps the compiler from turning the loop into an early-exit comparison.
  volatile unsigned char result = difference;
  return result == 0;
}

absl::optional<absl::string_view> BearerTokenOf(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme) ||
      authorization[kScheme.size()] != ' ') {
    return absl::nullopt;
  }
  absl::string_view token = absl::StripLeadingAsciiWhitespace(authorization.substr(kScheme.size()));
  if (token.empty()) return absl::nullopt;
  return token;
}

absl::StatusOr<std::string> ParseTokenFile(absl::string_view text, absl::string_view path) {
  absl::string_view token = absl::StripAsciiWhitespace(text);
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file ", path, ": the file is empty"));
  }
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--token-file ", path, ": the token is longer than ", kMaxTokenBytes, " bytes"));
  }
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      // The offending byte is not shown: it belongs to a secret.
      return absl::InvalidArgumentError(absl::StrCat(
          "--token-file ", path, ": the token must be one line of printable ASCII without blanks"));
    }
  }
  return std::string(token);
}

absl::StatusOr<std::unique_ptr<TokenFile>> TokenFile::Open(std::string path) {
  std::unique_ptr<TokenFile> file(new TokenFile(std::move(path)));
  if (absl::Status read = file->Refresh(); !read.ok()) return read;
  return file;
}

bool TokenFile::Allows(absl::optional<absl::string_view> authorization) {
  // A stat per request costs about a microsecond on a local file: cheaper than any request, and
  // a rotated Secret takes effect with the next request instead of after a polling period.
  if (absl::Status refreshed = Refresh(); !refreshed.ok()) {
    base::LogWarn(refreshed.message(), "; the token read before stays in force");
  }
  if (!authorization) return false;
  absl::optional<absl::string_view> token = BearerTokenOf(*authorization);
  return token && ConstantTimeEquals(*token, token_);
}

absl::Status TokenFile::Refresh() {
  struct stat info;
  if (::stat(path_.c_str(), &info) != 0) {
    Identity missing;
    if (refused_ == missing) return absl::OkStatus();
    refused_ = missing;
    return TokenFileError(path_, "cannot read it", errno);
  }
  Identity seen{info.st_dev, info.st_ino, info.st_size, info.st_mtim};
  if (seen == read_ || seen == refused_) return absl::OkStatus();
  auto refuse = [&](absl::Status status) {
    refused_ = seen;
    return status;
  };
  if (!S_ISREG(info.st_mode)) {
    return refuse(absl::FailedPreconditionError(
        absl::StrCat("--token-file ", path_, ": not a regular file")));
  }
  if (static_cast<size_t>(info.st_size) > kMaxTokenFileBytes) {
    return refuse(absl::FailedPreconditionError(absl::StrCat(
        "--token-file ", path_, ": ", info.st_size, " bytes is too large for a token file")));
  }
  base::UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return refuse(TokenFileError(path_, "cannot open it", errno));
  std::string text(kMaxTokenFileBytes + 1, '\0');
  size_t filled = 0;
  while (filled < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + filled, text.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return refuse(TokenFileError(path_, "cannot read it", errno));
    }
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  text.resize(filled);
  absl::StatusOr<std::string> token = ParseTokenFile(text, path_);
  if (!token.ok()) return refuse(token.status());
  if (read_) base::LogInfo("--token-file ", path_, ": a new token is in force");
  token_ = *std::move(token);
  read_ = seen;
  refused_.reset();
  return absl::OkStatus();
}

}  // namespace hawk::auth
