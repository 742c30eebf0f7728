#pragma once
// FileStore: a Store shared by processes through one file (PyTorch FileStore).
//
// Note [FileStore log]: the file is an append-only log of records
// (set, append, user-joined, user-left). Every operation takes an exclusive
// flock on the file, replays the records it has not seen into a private
// KvState, then appends its own record, so concurrent writers from many
// processes serialise through the lock and every process computes the same
// state (add and compareSet are resolved under the lock and logged as plain
// sets). A partial record at the tail can only come from a writer that died
// mid-write while holding the lock; the next writer truncates it away.
//
// Lifetime: with numWorkers > 0 the file is removed when numWorkers FileStore
// objects (over all processes) have been destroyed; with numWorkers <= 0 when
// the number of live users drops to zero. A process killed with SIGKILL never
// leaves, so its file stays (callers put it in a temporary directory).
//
// Blocking calls poll the file (1 ms backoff growing to 20 ms) until the keys
// appear or the timeout passes, then throw DistStoreError. deleteKey throws
// DistStoreError, as in PyTorch. Thread-safe.
#include <mutex>
#include <string>

#include "runtime/comm/store/kv_state.hpp"
#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

class FileStore : public Store {
 public:
  // Opens (creating) `path`; its directory must exist. Throws DistStoreError.
  explicit FileStore(std::string path, int numWorkers = -1,
                     std::chrono::milliseconds timeout = kDefaultTimeout);
  ~FileStore() override;

  const std::string& path() const { return path_; }
  int numWorkers() const { return numWorkers_; }

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys,
            std::chrono::milliseconds timeout = kUseDefaultTimeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t numKeys() override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;

 private:
  class FileLock;
  // Catches up with records written since the last call (file lock held).
  void refreshLocked();
  // Appends one record at the end of the log (file lock held, state caught up).
  void appendRecordLocked(char op, const std::string& key, const Bytes& value);
  void waitFor(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
               const char* op);

  std::string path_;
  int numWorkers_;
  int fd_ = -1;
  std::mutex mutex_;       // serialises threads of this process
  int64_t offset_ = 0;     // bytes of the log already replayed
  int64_t joined_ = 0;     // user-joined records seen
  int64_t left_ = 0;       // user-left records seen
  detail::KvState state_;
};

}  // namespace distlab::comm
