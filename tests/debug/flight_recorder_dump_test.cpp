// Dump files (Note [Dump files]): a newer dump replaces an older one without
// the file ever being missing, and a process that settles its dumps before
// _exit leaves a whole dump and no temporary name, even while another thread
// is dumping in a loop. (The scenario runner once found a rank's dump missing:
// the rank exited between the old unlink and the new link.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/core/clock.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using comm::FlightRecorder;

constexpr int kGlobalRank = 5;

// Points the dump prefix into `dir` for the test's life and registers a
// recorder for kGlobalRank, so dumpFlightRecorders() writes one file.
class DumpFixture {
 public:
  explicit DumpFixture(const TempDir& dir)
      : oldPrefix_(comm::flightRecorderDumpPrefix()),
        recorder_(std::make_shared<FlightRecorder>("g", "dump_test", std::vector<int>{kGlobalRank},
                                                   0, "shm", 4)) {
    comm::setFlightRecorderDumpPrefix(dir.path() + "/fr_");
    comm::registerFlightRecorder(recorder_);
  }
  ~DumpFixture() { comm::setFlightRecorderDumpPrefix(oldPrefix_); }
  std::string path() const { return comm::flightRecorderDumpPath(kGlobalRank); }

 private:
  std::string oldPrefix_;
  std::shared_ptr<FlightRecorder> recorder_;
};

int filesIn(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(FlightRecorderDumps, AReplacedDumpIsNeverMissing) {
  TempDir dir;
  DumpFixture fixture(dir);
  ASSERT_EQ(comm::dumpFlightRecorders("request", "first", kGlobalRank).size(), 1u);
  std::atomic<bool> done{false};
  std::thread dumper([&] {
    // Each dump replaces the last; enough of them that the reader below
    // overlaps hundreds of replacements.
    for (int i = 0; i < 400; ++i) comm::dumpFlightRecorders("request", "again", kGlobalRank);
    done = true;
  });
  int missing = 0, looks = 0;
  while (!done.load()) {
    ++looks;
    if (!std::filesystem::exists(fixture.path())) ++missing;
  }
  dumper.join();
  EXPECT_EQ(missing, 0) << "the dump was missing in " << missing << " of " << looks << " looks";
  EXPECT_EQ(filesIn(dir.path()), 1) << "a temporary name was left beside the dump";
}

// Exit codes of the child below, each naming what went wrong.
enum ChildExit { kOk = 0, kNoFirstDump = 10, kSettleTimedOut, kDumpMissing, kLeftovers, kDumped };

// `phase` varies where in a dump the other thread is when this one settles.
[[noreturn]] void settleWhileAnotherThreadDumps(const TempDir& dir, const DumpFixture& fixture,
                                                int phase) {
  ::alarm(20);  // the child ends even if something below hangs
  std::atomic<int> dumps{0};
  std::thread dumper([&] {
    for (;;) {
      comm::dumpFlightRecorders("request", "loop", kGlobalRank);
      ++dumps;
    }
  });
  // Wait until the dump has been replaced a few times (so the next dump is a
  // replacement), then a little longer, by an amount that differs per try.
  const int64_t giveUp = monotonicNowNs() + 10'000'000'000;
  while (dumps.load() < 3) {
    if (monotonicNowNs() > giveUp) ::_exit(kNoFirstDump);
  }
  for (int i = 0; i < phase * 500; ++i) (void)dumps.load();
  int code = kOk;
  if (!comm::settleFlightRecorderDumps(std::chrono::seconds(5))) code = kSettleTimedOut;
  else if (!std::filesystem::exists(fixture.path())) code = kDumpMissing;
  else if (filesIn(dir.path()) != 1) code = kLeftovers;
  else if (!comm::dumpFlightRecorders("request", "late", kGlobalRank).empty()) code = kDumped;
  ::_exit(code);  // the dumper thread is still looping: exactly the exit being tested
}

TEST(FlightRecorderDumps, SettlingBeforeExitLeavesAWholeDumpAndNoTemporaryName) {
  // Settling is for good, so each try runs in a child process. This states
  // the guarantee; it does not catch an unsettled exit reliably, whose window
  // (between two syscalls of a replacement) an exit rarely meets. The test
  // above catches the replacement that left that window.
  for (int attempt = 0; attempt < 20; ++attempt) {
    TempDir dir;
    DumpFixture fixture(dir);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) settleWhileAnotherThreadDumps(dir, fixture, attempt);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "attempt " << attempt << ": child killed by signal "
                                   << WTERMSIG(status);
    ASSERT_EQ(WEXITSTATUS(status), kOk) << "attempt " << attempt << " (see ChildExit)";
    EXPECT_TRUE(std::filesystem::exists(fixture.path()));
    EXPECT_EQ(filesIn(dir.path()), 1);
  }
}

}  // namespace
}  // namespace distlab::testing
