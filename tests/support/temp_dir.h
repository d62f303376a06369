#pragma once

// TempDir: a fresh directory for one test's files and sockets, removed recursively on
// destruction unless HAWK_KEEP_TMP=1 (then its path is printed to stderr).
//
// Unix socket paths must stay under 108 bytes (sun_path), so the directory is short:
// $TMPDIR/hk-XXXXXX, falling back to /tmp when $TMPDIR is too long for that.

#include <string>

namespace hawk::testing {

class TempDir {
 public:
  TempDir();  // aborts with a message if the directory cannot be created
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name; creates nothing.
  std::string File(const std::string& name) const;

 private:
  std::string path_;
};

// Reads a whole file; "" if it cannot be read.
std::string ReadFile(const std::string& path);
// Writes `text` to a temp file next to `path` and renames it over `path`.
bool WriteFile(const std::string& path, const std::string& text);

}  // namespace hawk::testing
