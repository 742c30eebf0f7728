// Dumps one rank's flight recorder (2,000 entries) into $TMPDIR/fr_rank_0.json
// over and over, printing "dump N" after each, until it is killed: the exit
// tests kill it mid-dump and check that no temporary or partial file stays.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/comm/debug/flight_recorder.hpp"

int main() {
  using namespace distlab::comm;
  const char* tmp = std::getenv("TMPDIR");
  setFlightRecorderDumpPrefix(std::string(tmp ? tmp : "/tmp") + "/fr_rank_");
  auto recorder = std::make_shared<FlightRecorder>("g", "default_pg", std::vector<int>{0}, 0,
                                                   "shm", 2000);
  registerFlightRecorder(recorder);
  for (uint64_t seq = 0; seq < 2000; ++seq) {
    WorkInfo info;
    info.groupName = "g";
    info.rank = 0;
    info.opType = OpType::kAllreduce;
    info.seq = seq;
    info.numelIn = info.numelOut = 1024;
    info.reduceOp = "sum";
    uint64_t id = recorder->record(info, std::chrono::milliseconds(1000), {}, {});
    recorder->markStarted(id);
    recorder->markCompleted(id, true, "");
  }
  for (long n = 1;; ++n) {
    if (dumpFlightRecorders("request", "exit test", 0).empty()) return 1;
    std::printf("dump %ld\n", n);
    std::fflush(stdout);
  }
}
