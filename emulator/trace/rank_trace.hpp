#pragma once
// One rank's tracing session in a scenario run: aligns the clock with rank 0
// through the store (Note [Trace clock alignment]), names the calling thread
// "compute", starts tracing; write() stops it and writes the rank's Chrome
// trace (runtime/core/trace_json.hpp) with the measured offset applied.
#include <string>

#include "emulator/trace/clock_align.hpp"

namespace distlab::emulator {

class RankTracer {
 public:
  // Collective over the store (every rank constructs one). Blocks as alignClocks.
  RankTracer(comm::Store& store, int rank, int worldSize, std::string path);
  ~RankTracer();
  RankTracer(const RankTracer&) = delete;
  RankTracer& operator=(const RankTracer&) = delete;

  const ClockAlignment& alignment() const { return alignment_; }
  // Stops tracing and writes the file (once; later calls do nothing).
  void write();

 private:
  int rank_;
  std::string path_;
  ClockAlignment alignment_;
  bool written_ = false;
};

}  // namespace distlab::emulator
