#pragma once
// Flight recorder: a ring buffer per group of the last operations with their
// state, dumped as JSON per rank when something goes wrong (PyTorch's
// FlightRecorder / NCCLTraceBuffer, for every backend here;
// docs/pytorch-semantics.md, "Flight recorder").
//
// Note [Flight recorder dumps]
// One file per global rank: "<prefix><global rank>.json", holding every group
// of that rank in this process. The prefix comes from TORCH_FR_DUMP_TEMP_FILE
// (also TORCH_NCCL_DEBUG_INFO_TEMP_FILE), default "/tmp/distlab_fr_rank_",
// given to configureFlightRecorder() by the monitor decorator from its group's
// read of the environment, or from setFlightRecorderDumpPrefix(). A dump
// replaces the previous file atomically (write + rename), so the last dump
// holds the most complete picture and the file is never missing once written.
// A process that ends with _exit calls settleFlightRecorderDumps() first, so
// no dump is cut off half-way.
// Triggers: "timeout" (watchdog), "error" (an operation failed), "mismatch"
// (DETAIL check), "signal" (SIGUSR2 by default, see watchdog.hpp), "peer"
// (another rank asked through the store), "request" (dumpFlightRecorders()).
// Schema (version "2.4-distlab"): top level {version, rank, pid, host,
// trigger, reason, dump_time_ns, pg_config{<name>: {name, desc, ranks,
// backend}}, pg_status{<name>: {last_enqueued_collective,
// last_started_collective, last_completed_collective}}, entries[...]}; each
// entry {record_id, pg_id, process_group[name, desc], collective_seq_id,
// p2p_seq_id, op_id, profiling_name ("shm:all_reduce"), time_created_ns,
// input_sizes, input_dtypes, output_sizes, output_dtypes, state
// (scheduled|started|completed|failed), time_discovered_started_ns,
// time_discovered_completed_ns (null until reached), duration_ms, retired,
// timeout_ms, is_p2p, peer, tag, reduce_op, input_splits, output_splits,
// timed_out, error}. Times are wall-clock ns since the Unix epoch.
//
// Buffer size: TORCH_FR_BUFFER_SIZE (also TORCH_NCCL_TRACE_BUFFER_SIZE),
// default 2000 entries per group; 0 disables recording. Configured the same way.
// Thread-safety: every function here is thread-safe.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/comm/work.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::comm {

inline constexpr size_t kDefaultFlightRecorderBufferSize = kDefaultFrBufferSize;

struct FlightRecorderEntry {
  uint64_t recordId = 0;
  uint64_t opId = 0;
  OpType opType = OpType::kUnknown;
  uint64_t seq = 0;
  bool isP2P = false;
  int peer = -1;
  int tag = 0;
  std::string reduceOp;
  // Shapes and dtypes as WorkInfo has them: copied without allocation into a
  // reused slot (Note [Tensor metadata without allocation]).
  TensorMetaList inputs, outputs;
  std::vector<int64_t> inputSplits, outputSplits;
  WorkState state = WorkState::kScheduled;
  int64_t createdNs = 0, startedNs = 0, completedNs = 0;  // wall clock; 0 = not reached
  int64_t timeoutMs = 0;
  bool timedOut = false;
  std::string error;
};

struct GroupStatus {
  uint64_t lastEnqueued = 0, lastStarted = 0, lastCompleted = 0;
};

class FlightRecorder {
 public:
  FlightRecorder(std::string groupName, std::string groupDesc, std::vector<int> globalRanks,
                 int rank, std::string backendName, size_t capacity);

  const std::string& groupName() const { return groupName_; }
  const std::string& groupDesc() const { return groupDesc_; }
  int rank() const { return rank_; }
  int globalRank() const { return globalRanks_.at(rank_); }

  // Records an issued operation; returns its record id.
  uint64_t record(const WorkInfo& info, Milliseconds timeout, std::vector<int64_t> inputSplits,
                  std::vector<int64_t> outputSplits);
  void markStarted(uint64_t recordId);
  void markCompleted(uint64_t recordId, bool success, const std::string& error);
  // markStarted then markCompleted under one lock, for an operation found
  // already finished (Note [Watching a finished Work]).
  void markFinished(uint64_t recordId, bool success, const std::string& error);
  void markTimedOut(uint64_t recordId);

  GroupStatus status() const;
  std::vector<FlightRecorderEntry> entries() const;
  const std::vector<int>& globalRanks() const { return globalRanks_; }
  const std::string& backendName() const { return backendName_; }

 private:
  FlightRecorderEntry* find(uint64_t recordId);  // REQUIRES(mutex_)
  // Completes the entry (once); `countStart` also counts it as started in
  // status() (markFinished). REQUIRES(mutex_)
  void completeLocked(uint64_t recordId, bool success, const std::string& error, bool countStart);
  size_t oldest() const;                          // REQUIRES(mutex_)

  const std::string groupName_, groupDesc_;
  const std::vector<int> globalRanks_;
  const int rank_;
  const std::string backendName_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  // Note [Flight recorder ring]: entries are written in place. The ring grows
  // to capacity_ slots once; after that record() overwrites the oldest slot by
  // assignment, so its vectors keep their storage and recording allocates
  // nothing. next_ is the slot record() writes; every slot holds a live entry.
  std::vector<FlightRecorderEntry> ring_;  // GUARDED_BY(mutex_)
  size_t next_ = 0;                        // GUARDED_BY(mutex_)
  uint64_t nextOpId_ = 0;                 // GUARDED_BY(mutex_)
  GroupStatus status_;                    // GUARDED_BY(mutex_)
};

using FlightRecorderPtr = std::shared_ptr<FlightRecorder>;

// ---- configuration (Note [Flight recorder dumps]) -------------------------------------
// Process-wide, because one dump writes every group of the rank.
struct FlightRecorderSettings {
  size_t bufferSize = kDefaultFlightRecorderBufferSize;  // entries per group; 0: none
  std::string dumpPrefix = kDefaultFrDumpPrefix;
};
// Takes `settings` for every field no setter has set (the monitor decorator
// calls it with each group's read of the environment, before the group's
// recorder is made; Note [Environment read once]).
void configureFlightRecorder(const FlightRecorderSettings& settings);
size_t flightRecorderBufferSize();  // as set, configured, or the default
void setFlightRecorderBufferSize(size_t entries);  // wins over configureFlightRecorder
std::string flightRecorderDumpPrefix();
void setFlightRecorderDumpPrefix(std::string prefix);  // wins over configureFlightRecorder

// ---- registry and dumps -------------------------------------------------------------------
// Recorders register on creation and are dumped while alive (weak references).
void registerFlightRecorder(const FlightRecorderPtr& recorder);
// The JSON dump of `globalRank`'s recorders in this process.
std::string flightRecorderJson(int globalRank, const std::string& trigger = "request",
                               const std::string& reason = "");
// Writes the dump of every global rank with recorders in this process (or
// only `globalRank` when >= 0); returns the files written. Never throws:
// a failed write is logged.
std::vector<std::string> dumpFlightRecorders(const std::string& trigger,
                                             const std::string& reason, int globalRank = -1);
// For a process about to end (_exit skips every destructor): waits up to `wait`
// for a dump in progress on another thread to finish and stops every later
// dump, which returns no files. False when the wait ran out. Idempotent.
bool settleFlightRecorderDumps(std::chrono::milliseconds wait = std::chrono::seconds(2));
// The file a rank's dump goes to with the current prefix.
std::string flightRecorderDumpPath(int globalRank);

}  // namespace distlab::comm
