// Replays files through a fuzz target's LLVMFuzzerTestOneInput, so that every build (gcc, no
// libFuzzer) compiles the targets and ctest runs them over their seed corpus. With the `fuzz`
// preset the same targets link libFuzzer instead (see CMakeLists.txt).
//
//   <target> FILE_OR_DIR…     runs each file (directories recursively); exits 1 if none was found

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::error_code error;
  uintmax_t size = std::filesystem::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  // A heap buffer of exactly the input's size, so that ASan catches a read past the end.
  std::vector<uint8_t> exact(error ? 0 : size);
  if (error || !in ||
      !in.read(reinterpret_cast<char*>(exact.data()), static_cast<std::streamsize>(exact.size()))) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  LLVMFuzzerTestOneInput(exact.data(), exact.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg)) {
        if (entry.is_regular_file() && RunFile(entry.path())) ++runs;
      }
    } else if (RunFile(arg)) {
      ++runs;
    }
  }
  std::printf("replayed %zu inputs\n", runs);
  return runs > 0 ? 0 : 1;
}
