#include "tests/support/temp_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace hawk::testing {
namespace {

// Room left for file names such as "master.sock.relay" inside the directory.
constexpr size_t kMaxBaseLength = 60;

std::string BaseDir() {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir != nullptr && tmpdir[0] == '/' && std::strlen(tmpdir) <= kMaxBaseLength) {
    std::string base = tmpdir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    return base;
  }
  return "/tmp";
}

}  // namespace

TempDir::TempDir() {
  std::string templ = BaseDir() + "/hk-XXXXXX";
  std::vector<char> buffer(templ.begin(), templ.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    std::fprintf(stderr, "TempDir: mkdtemp(%s): %s\n", templ.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = buffer.data();
}

TempDir::~TempDir() {
  const char* keep = std::getenv("HAWK_KEEP_TMP");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) {
    std::fprintf(stderr, "TempDir: keeping %s (HAWK_KEEP_TMP=1)\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (ec) std::fprintf(stderr, "TempDir: remove %s: %s\n", path_.c_str(), ec.message().c_str());
}

std::string TempDir::File(const std::string& name) const { return path_ + "/" + name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

}  // namespace hawk::testing
