// FileStore specifics: several processes on one file, exact counters under
// concurrent writers, file clean-up by the last user, a torn tail record.
#include "runtime/comm/store/file_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/core/errors.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::comm {
namespace {

using testing::RankContext;
using testing::SpawnMode;

TEST(FileStoreTest, TwoObjectsOnOneFileShareData) {
  testing::TempDir dir;
  FileStore a(dir.file("s"), 2);
  FileStore b(dir.file("s"), 2);
  a.setString("k", "v");
  EXPECT_EQ(b.getString("k"), "v");
  EXPECT_EQ(b.add("n", 2), 2);
  EXPECT_EQ(a.add("n", 3), 5);
  EXPECT_EQ(a.path(), dir.file("s"));
}

TEST(FileStoreTest, FileIsRemovedWhenTheLastOfNumWorkersLeaves) {
  testing::TempDir dir;
  std::string path = dir.file("s");
  {
    auto a = std::make_unique<FileStore>(path, 2);
    { FileStore b(path, 2); }
    EXPECT_TRUE(std::filesystem::exists(path)) << "one of two workers is still there";
    a.reset();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(FileStoreTest, NonFixedUsersRemoveTheFileWhenTheCountDropsToZero) {
  testing::TempDir dir;
  std::string path = dir.file("s");
  {
    FileStore a(path);
    { FileStore b(path); }
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(FileStoreTest, TornTailRecordFromADeadWriterIsDiscarded) {
  testing::TempDir dir;
  std::string path = dir.file("s");
  FileStore store(path, 1);
  store.setString("before", "ok");
  {
    // A writer that died after writing 3 bytes of a record header.
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "S\x05\x00", 3), 3);
    ::close(fd);
  }
  FileStore other(path, 1);
  other.setString("after", "fine");
  EXPECT_EQ(store.getString("after"), "fine");
  EXPECT_EQ(store.getString("before"), "ok");
  EXPECT_EQ(store.numKeys(), 2);
}

TEST(FileStoreTest, OpenInMissingDirectoryNamesThePath) {
  try {
    FileStore store("/nonexistent-distlab-dir/store");
    FAIL();
  } catch (const DistStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-distlab-dir/store"), std::string::npos);
  }
}

// Four processes each add 1 to one counter 1000 times: the total is exact.
TEST(FileStoreMultiProcessTest, ConcurrentAddsFromProcessesAreExact) {
  constexpr int kRanks = 4;
  constexpr int kAdds = 1000;
  testing::spawn(SpawnMode::kProcesses, kRanks, [](RankContext& ctx) {
    for (int i = 0; i < kAdds; ++i) ctx.store->add("counter", 1);
    ctx.store->add("done", 1);
    // Everyone waits for everyone, then reads the final value.
    ctx.store->setString("finished" + std::to_string(ctx.rank), "1");
    std::vector<std::string> keys;
    for (int r = 0; r < ctx.worldSize; ++r) keys.push_back("finished" + std::to_string(r));
    ctx.store->wait(keys);
    EXPECT_EQ(ctx.store->add("counter", 0), kRanks * kAdds);
    EXPECT_EQ(ctx.store->getString("done"), std::to_string(kRanks));
  });
}

}  // namespace
}  // namespace distlab::comm
