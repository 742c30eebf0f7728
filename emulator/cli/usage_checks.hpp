#pragma once
// Checks of command-line values shared by the `distlab` CLI and the bench
// binaries (header-only, so a bench binary needs no CLI library): each throws
// ValueError naming the flag, the value and what to do, which the caller turns
// into exit code 2 before any work starts.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "runtime/core/errors.hpp"

namespace distlab::cli {

// A file can be written at `path` (created if missing; a file created only
// for the check is removed again). Checked by creating it, not by access(),
// so it also holds for root and on read-only mounts.
inline void requireWritableFile(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ValueError(flag + ": give a file path");
  const bool existed = std::filesystem::exists(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw ValueError(flag + " " + path + ": cannot write this file (" + std::strerror(errno) +
                     "); give a path in a writable folder");
  }
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
}

// `path` is (or is now created as) a folder a file can be written in.
inline void requireWritableDir(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ValueError(flag + ": give a folder path");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path)) {
    throw ValueError(flag + " " + path + ": cannot create this folder (" +
                     (ec ? ec.message() : std::string("a file is in the way")) +
                     "); give a writable folder");
  }
  std::string probe = path + "/.distlab-write-check-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw ValueError(flag + " " + path + ": cannot write in this folder (" +
                     std::strerror(errno) + "); give a writable folder");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace distlab::cli
