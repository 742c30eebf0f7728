// The Store contract (store.hpp; docs/pytorch-semantics.md, "Stores"), checked against every
// implementation with exact values.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/store/store_factory.hpp"

namespace distlab::testing {
namespace {

using comm::Bytes;
using std::chrono::milliseconds;


class StoreContractTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  std::shared_ptr<comm::Store> make(milliseconds timeout = milliseconds(5000)) {
    return GetParam().make(dir_, timeout);
  }
  TempDir dir_;
};

TEST_P(StoreContractTest, SetOverwritesAndGetReturnsLatest) {
  auto store = make();
  store->set("key", b("first"));
  store->set("key", b("second"));
  EXPECT_EQ(s(store->get("key")), "second");
  EXPECT_EQ(store->numKeys(), 1);
}

TEST_P(StoreContractTest, AddCreatesCounterThenIncrements) {
  auto store = make();
  EXPECT_EQ(store->add("c", 1), 1);
  EXPECT_EQ(store->add("c", 6), 7);
  EXPECT_EQ(store->add("c", -10), -3);
  EXPECT_EQ(s(store->get("c")), "-3");
}

TEST_P(StoreContractTest, AddOnNonIntegerValueThrowsNamingKey) {
  auto store = make();
  store->set("text", b("hello"));
  try {
    store->add("text", 1);
    FAIL() << "add on a non-integer value must throw";
  } catch (const DistStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("text'"), std::string::npos) << e.what();
  }
  store->set("num", b("5"));
  EXPECT_EQ(store->add("num", 1), 6);
}

TEST_P(StoreContractTest, AddThatWouldOverflowThrowsAndKeepsTheValue) {
  auto store = make();
  const std::string max = std::to_string(INT64_MAX);
  const std::string min = std::to_string(INT64_MIN);
  store->set("big", b(max));
  store->set("small", b(min));
  for (auto [key, delta] : {std::pair<std::string, int64_t>{"big", 1}, {"big", INT64_MAX},
                            {"small", -1}, {"small", INT64_MIN}}) {
    try {
      store->add(key, delta);
      FAIL() << "add(" << key << ", " << delta << ") must not wrap";
    } catch (const DistStoreError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(key + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("overflow"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(s(store->get("big")), max);
  EXPECT_EQ(s(store->get("small")), min);
  EXPECT_EQ(store->add("big", -1), INT64_MAX - 1) << "the store goes on";
  EXPECT_EQ(store->add("small", 0), INT64_MIN);
}

TEST_P(StoreContractTest, CompareSetFollowsC10dContract) {
  auto store = make();
  store->set("key", b("first_value"));
  EXPECT_EQ(s(store->compareSet("key", b("first_value"), b("second_value"))), "second_value");
  EXPECT_EQ(s(store->get("key")), "second_value");
  EXPECT_EQ(s(store->compareSet("key", b("wrong"), b("third"))), "second_value");
  EXPECT_EQ(s(store->compareSet("absent", b("x"), b("y"))), "x");
  EXPECT_FALSE(store->check({"absent"}));
  EXPECT_EQ(s(store->compareSet("absent", b(""), b("created"))), "created");
  EXPECT_EQ(s(store->get("absent")), "created");
}

TEST_P(StoreContractTest, AppendConcatenatesAndCreates) {
  auto store = make();
  store->append("k", b("po"));
  store->append("k", b("tato"));
  EXPECT_EQ(s(store->get("k")), "potato");
}

TEST_P(StoreContractTest, MultiSetAndMultiGet) {
  auto store = make();
  store->multiSet({"a", "b"}, {b("po"), b("tato")});
  auto values = store->multiGet({"a", "b"});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(s(values[0]), "po");
  EXPECT_EQ(s(values[1]), "tato");
  EXPECT_THROW(store->multiSet({"a"}, {}), ValueError);
}

TEST_P(StoreContractTest, CheckNeverBlocks) {
  auto store = make();
  EXPECT_TRUE(store->check({}));
  store->set("a", b("1"));
  EXPECT_TRUE(store->check({"a"}));
  EXPECT_FALSE(store->check({"a", "b"}));
}

TEST_P(StoreContractTest, GetTimesOutNamingKeyAndTimeout) {
  auto store = make(milliseconds(100));
  Stopwatch watch;
  try {
    store->get("never");
    FAIL() << "get of a missing key must time out";
  } catch (const DistStoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("never"), std::string::npos) << what;
    EXPECT_NE(what.find("100 ms"), std::string::npos) << what;
  }
  EXPECT_GE(watch.elapsed().count(), 100);
}

TEST_P(StoreContractTest, WaitUsesExplicitOrSettableTimeout) {
  auto store = make(milliseconds(30000));
  store->set("present", b("1"));
  try {
    store->wait({"present", "missing"}, milliseconds(50));
    FAIL();
  } catch (const DistStoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("missing]"), std::string::npos) << what;
    EXPECT_NE(what.find("50 ms"), std::string::npos) << what;
  }
  store->setTimeout(milliseconds(60));
  EXPECT_EQ(store->timeout(), milliseconds(60));
  try {
    store->wait({"missing"});
    FAIL();
  } catch (const DistStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("60 ms"), std::string::npos) << e.what();
  }
}

TEST_P(StoreContractTest, BlockedGetWakesWhenAnotherThreadSets) {
  auto store = make(milliseconds(20000));
  std::thread setter([&] {
    store->wait({"ready"});
    store->set("late", b("value"));
  });
  store->set("ready", b("1"));
  EXPECT_EQ(s(store->get("late")), "value");
  setter.join();
}

TEST_P(StoreContractTest, DeleteKey) {
  auto store = make();
  store->set("k", b("v"));
  if (!GetParam().supportsDelete) {
    EXPECT_THROW(store->deleteKey("k"), DistStoreError);
    return;
  }
  EXPECT_TRUE(store->deleteKey("k"));
  EXPECT_FALSE(store->deleteKey("k"));
  EXPECT_FALSE(store->check({"k"}));
  EXPECT_EQ(store->numKeys(), 0);
}

TEST_P(StoreContractTest, ConcurrentAddsFromThreadsAreExact) {
  auto store = make();
  constexpr int kThreads = 4;
  constexpr int kAdds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) store->add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store->add("counter", 0), kThreads * kAdds);
}

TEST_P(StoreContractTest, BinaryValuesRoundTrip) {
  auto store = make();
  Bytes value;
  for (int i = 0; i < 256; ++i) value.push_back(static_cast<uint8_t>(i));
  store->set("bin", value);
  EXPECT_EQ(store->get("bin"), value);
  store->set("empty", {});
  EXPECT_TRUE(store->get("empty").empty());
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreContractTest, ::testing::ValuesIn(allStoreKinds()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace distlab::testing
