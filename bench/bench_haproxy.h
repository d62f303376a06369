#pragma once

// Pieces shared by the bench programs that drive a real HAProxy: the versions to run (from
// scripts/haproxy-versions.sh's manifest or LABEL=PATH), `haproxy -v`, the command line as a shell
// would take it, and a raw CLI client in prompt mode for the baselines.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/socket_util.h"

namespace hawk::bench {

using hawk::testing::ConnectUnix;
using hawk::testing::ReadSome;
using hawk::testing::UniqueFd;
using hawk::testing::WriteAll;

struct Haproxy {
  std::string label;
  std::string binary;
  std::string version_line;  // the first line of `haproxy -v`
};

inline std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

inline std::string VersionLine(const std::string& binary) {
  std::string output;
  std::string command = "'" + binary + "' -v 2>&1";
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[256];
    if (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output = buffer;
    while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    }
    ::pclose(pipe);
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  return output;
}

// The manifest's "<label> <binary>" lines (scripts/haproxy-versions.sh writes it); empty if it
// cannot be read.
inline std::vector<Haproxy> ReadManifest(const std::string& path) {
  std::vector<Haproxy> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 >= line.size()) continue;
    out.push_back({line.substr(0, space), line.substr(space + 1), ""});
  }
  return out;
}

// --haproxy's value: `all` (every manifest line, in its order), or a comma-separated list of
// LABEL=PATH (these binaries) and LABEL (the manifest's binary for it). False with a message on
// stderr if an entry is bad.
inline bool ParseHaproxy(const std::string& spec, const std::string& manifest_path,
                         std::vector<Haproxy>* out) {
  std::vector<Haproxy> manifest = ReadManifest(manifest_path);
  if (spec == "all") {
    if (manifest.empty()) {
      std::fprintf(stderr, "--haproxy all: no versions in the manifest %s\n",
                   manifest_path.c_str());
      return false;
    }
    *out = manifest;
    return true;
  }
  for (const std::string& entry : Split(spec, ',')) {
    size_t eq = entry.find('=');
    if (eq != std::string::npos) {
      if (eq == 0 || eq + 1 >= entry.size()) {
        std::fprintf(stderr, "--haproxy: '%s' is not LABEL=PATH\n", entry.c_str());
        return false;
      }
      out->push_back({entry.substr(0, eq), entry.substr(eq + 1), ""});
      continue;
    }
    auto it = std::find_if(manifest.begin(), manifest.end(),
                           [&](const Haproxy& h) { return h.label == entry; });
    if (it == manifest.end()) {
      std::fprintf(stderr, "--haproxy: no version '%s' in the manifest %s\n", entry.c_str(),
                   manifest_path.c_str());
      return false;
    }
    out->push_back(*it);
  }
  return !out->empty();
}

inline std::string ShellWord(const std::string& arg) {
  if (arg.find_first_of(" \t'\"$\\*?") == std::string::npos) return arg;
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The raw baselines' client: one CLI connection in prompt mode, kept open. On the master a reply
// ends at its prompt (`master`, optional `[…]` and `(…)`, then `> `); on a worker's own stats
// socket (`worker` true) at `\n> ` (the reply's empty line, then the prompt).

class PromptCli {
 public:
  bool Open(const std::string& socket, std::string* error, bool worker = false) {
    worker_ = worker;
    fd_ = ConnectUnix(socket, std::chrono::steady_clock::now() + std::chrono::seconds(5), error);
    if (!fd_.valid()) return false;
    std::string ignored;
    return Send("prompt\n", 1, &ignored, error);
  }

  // Writes `lines` and reads until `prompts` prompts have arrived; the bytes before the last.
  // The writing runs on its own thread while the replies are read: a long pipeline's replies
  // would otherwise fill the socket buffers both ways and stall both ends.
  bool Send(const std::string& lines, int prompts, std::string* reply, std::string* error,
            std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    bool written = false;
    std::string write_error;
    std::thread writer([&] { written = WriteAll(fd_.get(), lines, deadline, &write_error); });
    bool read = Read(prompts, deadline, error);
    writer.join();
    if (!written) {
      *error = write_error;
      return false;
    }
    if (read) *reply = buffer_;
    return read;
  }

 private:
  bool Read(int prompts, std::chrono::steady_clock::time_point deadline, std::string* error) {
    buffer_.clear();
    size_t from = 0;
    int seen = 0;
    char chunk[4096];
    while (seen < prompts) {
      ssize_t n = ReadSome(fd_.get(), chunk, sizeof(chunk), deadline, error);
      if (n <= 0) {
        if (n == 0) *error = "master closed the connection";
        return false;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
      for (size_t end; (end = PromptEnd(from)) != std::string::npos; from = end) ++seen;
    }
    return true;
  }

  // The end of the first complete prompt at or after `from`, or npos.
  size_t PromptEnd(size_t from) const {
    if (worker_) {
      size_t at = buffer_.find("\n> ", from);
      return at == std::string::npos ? at : at + 3;
    }
    for (size_t at = buffer_.find("master", from); at != std::string::npos;
         at = buffer_.find("master", at + 1)) {
      size_t p = at + 6;
      for (char open : {'[', '('}) {
        char close = open == '[' ? ']' : ')';
        if (p < buffer_.size() && buffer_[p] == open) {
          size_t c = buffer_.find(close, p);
          if (c == std::string::npos) return std::string::npos;
          p = c + 1;
        }
      }
      if (p + 2 <= buffer_.size() && buffer_.compare(p, 2, "> ") == 0) return p + 2;
    }
    return std::string::npos;
  }

  UniqueFd fd_;
  std::string buffer_;
  bool worker_ = false;
};

}  // namespace hawk::bench
