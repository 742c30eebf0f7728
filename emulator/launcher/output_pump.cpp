#include "emulator/launcher/output_pump.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "runtime/core/clock.hpp"

namespace distlab::emulator {
namespace {
constexpr size_t kMaxLine = 64 * 1024;
}  // namespace

bool looksLikeError(const std::string& line) {
  std::string lower(line.size(), '\0');
  std::transform(line.begin(), line.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* word : {"error", "exception", "fatal", "terminate called", "what():", "abort",
                           "failed", "traceback"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

OutputPump::~OutputPump() {
  for (auto& s : streams_) {
    if (s.fd >= 0) ::close(s.fd);
  }
  for (auto& [rank, log] : logs_) {
    if (log.file) std::fclose(log.file);
  }
}

void OutputPump::addRank(int rank, int stdoutFd, int stderrFd, const std::string& logPath) {
  streams_.push_back({rank, false, stdoutFd, {}});
  streams_.push_back({rank, true, stderrFd, {}});
  RankLog& log = logs_[rank];
  if (log.file) std::fclose(log.file);
  log = RankLog{};
  if (!logPath.empty()) log.file = std::fopen(logPath.c_str(), "w");
}

void OutputPump::emit(Stream& s, const std::string& line) {
  RankLog& log = logs_[s.rank];
  if (log.firstError.empty() && looksLikeError(line)) log.firstError = line;
  if (s.isStderr && log.firstStderr.empty() && !line.empty()) log.firstStderr = line;
  if (log.file) {
    std::fputs(line.c_str(), log.file);
    std::fputc('\n', log.file);
    std::fflush(log.file);
  }
  sink_(s.rank, s.isStderr, line);
}

void OutputPump::readStream(Stream& s) {
  char buf[65536];
  while (s.fd >= 0) {
    ssize_t n = ::read(s.fd, buf, sizeof(buf));
    if (n > 0) {
      s.partial.append(buf, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
        emit(s, s.partial.substr(start, nl - start));
      }
      s.partial.erase(0, start);
      if (s.partial.size() > kMaxLine) {  // a runaway line without '\n'
        emit(s, s.partial);
        s.partial.clear();
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (!s.partial.empty()) emit(s, s.partial);  // last line without '\n'
    s.partial.clear();
    ::close(s.fd);
    s.fd = -1;
  }
}

void OutputPump::pumpOnce(std::chrono::milliseconds wait, int wakeFd) {
  std::vector<pollfd> fds;
  std::vector<Stream*> owners;
  for (auto& s : streams_) {
    if (s.fd < 0) continue;
    fds.push_back({s.fd, POLLIN, 0});
    owners.push_back(&s);
  }
  if (wakeFd >= 0) fds.push_back({wakeFd, POLLIN, 0});
  if (fds.empty()) return;
  int rc = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
  if (rc <= 0) return;
  for (size_t i = 0; i < owners.size(); ++i) {
    if (fds[i].revents != 0) readStream(*owners[i]);
  }
}

void OutputPump::drain(std::chrono::milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  while (!deadline.expired()) {
    bool anyOpen = std::any_of(streams_.begin(), streams_.end(),
                               [](const Stream& s) { return s.fd >= 0; });
    if (!anyOpen) break;
    pumpOnce(std::min(deadline.remaining(), std::chrono::milliseconds(50)));
  }
  for (auto& s : streams_) {
    if (s.fd < 0) continue;
    if (!s.partial.empty()) emit(s, s.partial);
    ::close(s.fd);
    s.fd = -1;
  }
  streams_.clear();
}

std::string OutputPump::firstErrorLine(int rank) const {
  auto it = logs_.find(rank);
  if (it == logs_.end()) return "";
  return it->second.firstError.empty() ? it->second.firstStderr : it->second.firstError;
}

}  // namespace distlab::emulator
