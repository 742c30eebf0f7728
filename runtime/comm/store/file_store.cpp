#include "runtime/comm/store/file_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

constexpr char kSet = 'S';
constexpr char kAppend = 'A';
constexpr char kJoin = 'J';
constexpr char kLeave = 'L';
constexpr size_t kHeaderBytes = 1 + 4 + 4;

[[noreturn]] void throwErrno(const std::string& path, const char* what) {
  throw DistStoreError(
      fmt::format("FileStore '{}': {} failed: {}", path, what, std::strerror(errno)));
}

void putU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t getU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

// Holds the exclusive flock for one operation (threads already hold mutex_).
class FileStore::FileLock {
 public:
  explicit FileLock(FileStore& store) : store_(store) {
    while (::flock(store_.fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throwErrno(store_.path_, "flock");
    }
    store_.refreshLocked();
  }
  ~FileLock() { ::flock(store_.fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  FileStore& store_;
};

FileStore::FileStore(std::string path, int numWorkers, std::chrono::milliseconds timeout)
    : Store(timeout), path_(std::move(path)), numWorkers_(numWorkers) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throwErrno(path_, "open");
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  appendRecordLocked(kJoin, "", {});
}

FileStore::~FileStore() {
  try {
    std::lock_guard<std::mutex> guard(mutex_);
    FileLock lock(*this);
    appendRecordLocked(kLeave, "", {});
    bool last = numWorkers_ > 0 ? left_ >= numWorkers_ : joined_ == left_;
    if (last && ::unlink(path_.c_str()) != 0 && errno != ENOENT) {
      DL_LOG(WARNING, "FileStore '{}': could not remove the file: {}", path_, std::strerror(errno));
    }
  } catch (const std::exception& e) {
    DL_LOG(WARNING, "FileStore '{}': leaving failed: {}", path_, e.what());
  }
  ::close(fd_);
}

void FileStore::refreshLocked() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throwErrno(path_, "fstat");
  if (st.st_size <= offset_) return;
  std::string buf(static_cast<size_t>(st.st_size - offset_), '\0');
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = ::pread(fd_, buf.data() + got, buf.size() - got, offset_ + got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwErrno(path_, "read");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  size_t pos = 0;
  while (got - pos >= kHeaderBytes) {
    char op = buf[pos];
    uint32_t keyLen = getU32(&buf[pos + 1]);
    uint32_t valLen = getU32(&buf[pos + 5]);
    size_t total = kHeaderBytes + keyLen + valLen;
    if (got - pos < total) break;  // partial tail (Note [FileStore log])
    std::string key(&buf[pos + kHeaderBytes], keyLen);
    const auto* v = reinterpret_cast<const uint8_t*>(&buf[pos + kHeaderBytes + keyLen]);
    Bytes value(v, v + valLen);
    if (op == kSet) state_.set(key, std::move(value));
    else if (op == kAppend) state_.append(key, value);
    else if (op == kJoin) ++joined_;
    else if (op == kLeave) ++left_;
    else throw DistStoreError(fmt::format("FileStore '{}': corrupt record at offset {}; use a "
                                          "fresh file for each job", path_, offset_ + pos));
    pos += total;
  }
  offset_ += static_cast<int64_t>(pos);
}

void FileStore::appendRecordLocked(char op, const std::string& key, const Bytes& value) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throwErrno(path_, "fstat");
  if (st.st_size > offset_ && ::ftruncate(fd_, offset_) != 0) throwErrno(path_, "ftruncate");
  std::string rec;
  rec.reserve(kHeaderBytes + key.size() + value.size());
  rec.push_back(op);
  putU32(rec, static_cast<uint32_t>(key.size()));
  putU32(rec, static_cast<uint32_t>(value.size()));
  rec.append(key);
  rec.append(reinterpret_cast<const char*>(value.data()), value.size());
  size_t done = 0;
  while (done < rec.size()) {
    ssize_t n = ::pwrite(fd_, rec.data() + done, rec.size() - done, offset_ + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwErrno(path_, "write");
    done += static_cast<size_t>(n);
  }
  // Our own record is applied by replaying it, so the state cannot diverge.
  refreshLocked();
}

void FileStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  appendRecordLocked(kSet, key, value);
}

void FileStore::waitFor(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
                        const char* op) {
  Deadline deadline = Deadline::after(timeout);
  auto backoff = std::chrono::milliseconds(1);
  while (true) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      FileLock lock(*this);
      if (state_.containsAll(keys)) return;
      if (deadline.expired()) {
        throw DistStoreError(detail::timeoutMessage("FileStore", op, state_.missing(keys), timeout));
      }
    }
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(20));
  }
}

Bytes FileStore::get(const std::string& key) { return multiGet({key}).front(); }

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  int64_t current = 0;
  if (const Bytes* v = state_.find(key)) current = detail::parseCounter(key, *v);
  int64_t value = detail::addCounter(key, current, delta);
  appendRecordLocked(kSet, key, detail::encodeCounter(value));
  return value;
}

Bytes FileStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  detail::KvState probe;
  if (const Bytes* v = state_.find(key)) probe.set(key, *v);
  Bytes out = probe.compareSet(key, expected, desired);
  const Bytes* after = probe.find(key);
  const Bytes* before = state_.find(key);
  if (after != nullptr && (before == nullptr || *before != *after)) {
    appendRecordLocked(kSet, key, *after);
  }
  return out;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  waitFor(keys, resolve(timeout), "wait");
}

bool FileStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  return state_.containsAll(keys);
}

bool FileStore::deleteKey(const std::string& key) {
  throw DistStoreError(fmt::format("FileStore '{}': deleteKey('{}') is not supported by "
                                   "FileStore (as in PyTorch); use HashStore or TCPStore",
                                   path_, key));
}

int64_t FileStore::numKeys() {
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  return state_.size();
}

void FileStore::append(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  appendRecordLocked(kAppend, key, value);
}

std::vector<Bytes> FileStore::multiGet(const std::vector<std::string>& keys) {
  waitFor(keys, timeout(), keys.size() == 1 ? "get" : "multiGet");
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  std::vector<Bytes> out;
  for (const auto& key : keys) out.push_back(*state_.find(key));
  return out;
}

void FileStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw ValueError(fmt::format("FileStore multiSet: {} keys but {} values; pass one value per "
                                 "key", keys.size(), values.size()));
  }
  std::lock_guard<std::mutex> guard(mutex_);
  FileLock lock(*this);
  for (size_t i = 0; i < keys.size(); ++i) appendRecordLocked(kSet, keys[i], values[i]);
}

}  // namespace distlab::comm
