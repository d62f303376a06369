// store::ConfinedDir over any path. Inputs are path texts in which `{T}` stands for a fixed tree
// built once in a temporary directory:
//   {T}/dir              the confined directory: hosts.map, sub/deep.map, state/inside.map
//                        (state is excluded), link -> sub, out -> {T}/out, final.map ->
//                        sub/deep.map, escape.map -> {T}/out/victim, plain (a file), fifo.map
//   {T}/dir-sibling      a directory whose path shares the prefix: victim
//   {T}/out              outside: victim
// The first byte picks the resolution (odd, e.g. '1': openat2; even, e.g. '0': the component
// walk); the rest is the path (one final newline ignored). Properties: Lookup and Replace succeed
// exactly when an independent oracle (lexical checks, then lstat of every component) says the path
// names an existing regular file inside the directory, reached without a symlink, outside the
// excluded one; a file replaced holds what was written; nothing outside the directory, inside the
// excluded one, or behind a symlink changes. Seeds: tests/fuzz/corpus/confined_dir (hostile paths).

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "agent/store/confined_dir.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

struct Tree {
  std::string root;  // {T}
  std::string dir;   // {T}/dir
  std::unique_ptr<hawk::store::ConfinedDir> openat2;
  std::unique_ptr<hawk::store::ConfinedDir> walk;
  std::map<std::string, std::string> protected_files;  // path → contents, never to change
};

std::string* tree_root = nullptr;  // removed at exit

Tree* BuildTree() {
  auto* tree = new Tree;
  std::string pattern = (fs::temp_directory_path() / "hawk-confined-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  tree->root = pattern;
  tree_root = new std::string(pattern);
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(*tree_root, ignored);
  });
  tree->dir = pattern + "/dir";
  const std::string& t = tree->root;
  const std::string& d = tree->dir;
  for (const std::string& directory : {d, d + "/sub", d + "/state", t + "/out", d + "-sibling"}) {
    fs::create_directories(directory);
  }
  WriteFile(d + "/hosts.map", "a.example.com be_a\n");
  WriteFile(d + "/sub/deep.map", "deep\n");
  WriteFile(d + "/plain", "plain\n");
  ::mkfifo((d + "/fifo.map").c_str(), 0600);
  fs::create_symlink(d + "/sub", d + "/link");
  fs::create_symlink(t + "/out", d + "/out");
  fs::create_symlink("sub/deep.map", d + "/final.map");
  fs::create_symlink(t + "/out/victim", d + "/escape.map");
  tree->protected_files = {{d + "/state/inside.map", "journal\n"},
                           {t + "/out/victim", "victim\n"},
                           {d + "-sibling/victim", "sibling\n"}};
  for (const auto& [path, contents] : tree->protected_files) WriteFile(path, contents);
  for (bool use_openat2 : {true, false}) {
    hawk::store::ConfinedDirOptions options;
    options.name = "--table-files-dir";
    options.excluded.push_back({"--state-dir", d + "/state"});
    options.use_openat2 = use_openat2;
    auto created = hawk::store::ConfinedDir::Create(d, options);
    if (!created.ok()) std::abort();
    (use_openat2 ? tree->openat2 : tree->walk) = *std::move(created);
  }
  return tree;
}

// Whether hawk may replace `path`, decided without ConfinedDir's code.
bool Allowed(const Tree& tree, const std::string& path) {
  if (path.empty() || path.find('\0') != std::string::npos) return false;
  std::vector<std::string> parts = absl::StrSplit(path, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty() && i == 0) continue;
    if (parts[i].empty() || parts[i] == "." || parts[i] == "..") return false;
  }
  std::string relative = path;
  if (absl::StartsWith(path, "/")) {
    if (!absl::StartsWith(path, tree.dir + "/")) return false;
    relative = path.substr(tree.dir.size() + 1);
  }
  std::vector<std::string> components = absl::StrSplit(relative, '/');
  if (components.front() == "state") return false;
  std::string at = tree.dir;
  for (size_t i = 0; i < components.size(); ++i) {
    at += "/" + components[i];
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) return false;
    bool last = i + 1 == components.size();
    if (last ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Tree* tree = BuildTree();
  if (size == 0) return 0;
  bool use_openat2 = (data[0] & 1) != 0;
  std::string path = absl::StrReplaceAll(
      std::string(reinterpret_cast<const char*>(data) + 1, size - 1), {{"{T}", tree->root}});
  // Seeds end with a newline; a path that does is refused like any other, so strip one.
  if (!path.empty() && path.back() == '\n') path.pop_back();
  const hawk::store::ConfinedDir& dir = use_openat2 ? *tree->openat2 : *tree->walk;
  bool allowed = Allowed(*tree, path);

  auto looked = dir.Lookup(path);
  HAWK_FUZZ_CHECK(looked.ok() == allowed, "Lookup disagrees with the oracle");
  auto replaced = dir.Replace(path, "fuzz\n");
  HAWK_FUZZ_CHECK(replaced.ok() == allowed, "Replace disagrees with the oracle");
  if (replaced.ok()) {
    std::string absolute = absl::StartsWith(path, "/") ? path : tree->dir + "/" + path;
    HAWK_FUZZ_CHECK(ReadFile(absolute) == "fuzz\n", "a replaced file does not hold the contents");
  }
  for (const auto& [file, contents] : tree->protected_files) {
    HAWK_FUZZ_CHECK(ReadFile(file) == contents, "a protected file changed");
  }
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(tree->root)) {
    HAWK_FUZZ_CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos,
                    "a temporary file was left behind");
  }
  HAWK_FUZZ_CHECK(fs::is_symlink(tree->dir + "/final.map") &&
                      fs::is_symlink(tree->dir + "/escape.map") &&
                      fs::is_symlink(tree->dir + "/link") && fs::is_symlink(tree->dir + "/out"),
                  "a symlink was replaced");
  return 0;
}
