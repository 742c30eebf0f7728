// Stateful property test: random command sequences run against every store
// and against a std::map model; every reply must match the model.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <map>

#include "runtime/comm/store/kv_state.hpp"
#include "runtime/core/errors.hpp"
#include "tests/store/store_factory.hpp"

namespace distlab::testing {
namespace {

using comm::Bytes;
using comm::Store;
using Model = std::map<std::string, std::string>;
using Cmd = rc::state::Command<Model, Store>;


// A small key space so commands collide; values mix counters and text.
rc::Gen<std::string> genKey() { return rc::gen::element<std::string>("a", "b", "c", "d"); }
rc::Gen<std::string> genValue() {
  return rc::gen::oneOf(rc::gen::element<std::string>("", "0", "7", "-3", "x", "po", "tato"),
                        rc::gen::map(rc::gen::inRange(-50, 50),
                                     [](int v) { return std::to_string(v); }));
}

bool isCounter(const std::string& v) {
  try {
    comm::detail::parseCounter("k", b(v));
    return true;
  } catch (const DistStoreError&) {
    return false;
  }
}

struct Set : Cmd {
  std::string key = *genKey(), value = *genValue();
  void apply(Model& m) const override { m[key] = value; }
  void run(const Model&, Store& st) const override { st.set(key, b(value)); }
  void show(std::ostream& os) const override { os << "set(" << key << ", '" << value << "')"; }
};

struct Get : Cmd {
  std::string key = *genKey();
  void run(const Model& m, Store& st) const override {
    auto it = m.find(key);
    if (it != m.end()) {
      RC_ASSERT(s(st.get(key)) == it->second);
    } else {
      // The store's timeout is a few ms.
      try {
        std::string got = s(st.get(key));
        RC_FAIL("get(" + key + ") of a missing key returned '" + got + "'");
      } catch (const DistStoreError&) {
      }
    }
  }
  void show(std::ostream& os) const override { os << "get(" << key << ")"; }
};

struct Add : Cmd {
  std::string key = *genKey();
  int delta = *rc::gen::inRange(-5, 6);
  bool valid(const Model& m) const { return !m.count(key) || isCounter(m.at(key)); }
  void apply(Model& m) const override {
    if (!valid(m)) return;
    int64_t base = m.count(key) ? std::stoll(m.at(key)) : 0;
    m[key] = std::to_string(base + delta);
  }
  void run(const Model& m, Store& st) const override {
    if (!valid(m)) {
      try {
        int64_t got = st.add(key, delta);
        RC_FAIL("add(" + key + ") on non-integer '" + m.at(key) + "' returned " +
                std::to_string(got));
      } catch (const DistStoreError&) {
      }
      return;
    }
    int64_t base = m.count(key) ? std::stoll(m.at(key)) : 0;
    RC_ASSERT(st.add(key, delta) == base + delta);
  }
  void show(std::ostream& os) const override { os << "add(" << key << ", " << delta << ")"; }
};

struct CompareSet : Cmd {
  std::string key = *genKey(), expected = *genValue(), desired = *genValue();
  bool swaps(const Model& m) const {
    auto it = m.find(key);
    return (it == m.end() && expected.empty()) || (it != m.end() && it->second == expected);
  }
  void apply(Model& m) const override {
    if (swaps(m)) m[key] = desired;
  }
  void run(const Model& m, Store& st) const override {
    std::string want = swaps(m) ? desired : (m.count(key) ? m.at(key) : expected);
    RC_ASSERT(s(st.compareSet(key, b(expected), b(desired))) == want);
  }
  void show(std::ostream& os) const override {
    os << "compareSet(" << key << ", '" << expected << "', '" << desired << "')";
  }
};

struct Append : Cmd {
  std::string key = *genKey(), value = *genValue();
  void apply(Model& m) const override { m[key] += value; }
  void run(const Model&, Store& st) const override { st.append(key, b(value)); }
  void show(std::ostream& os) const override { os << "append(" << key << ", '" << value << "')"; }
};

struct Delete : Cmd {
  std::string key = *genKey();
  void apply(Model& m) const override { m.erase(key); }
  void run(const Model& m, Store& st) const override {
    RC_ASSERT(st.deleteKey(key) == (m.count(key) != 0));
  }
  void show(std::ostream& os) const override { os << "deleteKey(" << key << ")"; }
};

struct Check : Cmd {
  std::vector<std::string> keys = *rc::gen::container<std::vector<std::string>>(genKey());
  void run(const Model& m, Store& st) const override {
    bool all = true;
    for (const auto& k : keys) all = all && m.count(k) != 0;
    RC_ASSERT(st.check(keys) == all);
  }
  void show(std::ostream& os) const override { os << "check(" << keys.size() << " keys)"; }
};

struct NumKeys : Cmd {
  void run(const Model& m, Store& st) const override {
    int64_t n = st.numKeys();
    RC_LOG() << "numKeys() = " << n << ", model has " << m.size() << "\n";
    RC_ASSERT(n == static_cast<int64_t>(m.size()));
  }
  void show(std::ostream& os) const override { os << "numKeys()"; }
};

struct MultiSetGet : Cmd {
  std::string k1 = *genKey(), k2 = *genKey(), v1 = *genValue(), v2 = *genValue();
  void apply(Model& m) const override {
    m[k1] = v1;
    m[k2] = v2;
  }
  void run(const Model& m, Store& st) const override {
    st.multiSet({k1, k2}, {b(v1), b(v2)});
    Model after = m;
    apply(after);
    auto got = st.multiGet({k1, k2});
    RC_ASSERT(s(got.at(0)) == after.at(k1));
    RC_ASSERT(s(got.at(1)) == after.at(k2));
    st.wait({k1, k2}, std::chrono::milliseconds(1000));
  }
  void show(std::ostream& os) const override {
    os << "multiSet+multiGet(" << k1 << "='" << v1 << "', " << k2 << "='" << v2 << "')";
  }
};

void checkKind(const StoreKind& kind) {
  TempDir dir;
  auto store = kind.make(dir, std::chrono::milliseconds(5));
  if (kind.supportsDelete) {
    rc::state::check(Model{}, *store,
                     rc::state::gen::execOneOfWithArgs<Set, Get, Add, CompareSet, Append, Delete,
                                                       Check, NumKeys, MultiSetGet>());
  } else {
    rc::state::check(Model{}, *store,
                     rc::state::gen::execOneOfWithArgs<Set, Get, Add, CompareSet, Append, Check,
                                                       NumKeys, MultiSetGet>());
    RC_ASSERT_THROWS_AS(store->deleteKey("a"), DistStoreError);
  }
}

RC_GTEST_PROP(StoreModelTest, HashStoreMatchesModel, ()) { checkKind(allStoreKinds().at(0)); }
RC_GTEST_PROP(StoreModelTest, FileStoreMatchesModel, ()) { checkKind(allStoreKinds().at(1)); }
RC_GTEST_PROP(StoreModelTest, PrefixStoreMatchesModel, ()) { checkKind(allStoreKinds().at(2)); }
RC_GTEST_PROP(StoreModelTest, TCPStoreMatchesModel, ()) { checkKind(allStoreKinds().at(3)); }

TEST(StoreModelTest, EveryStoreKindIsCovered) {
  auto kinds = allStoreKinds();
  ASSERT_EQ(kinds.size(), 4u);
  EXPECT_EQ(kinds[0].name, "Hash");
  EXPECT_EQ(kinds[1].name, "File");
  EXPECT_EQ(kinds[2].name, "PrefixOverHash");
  EXPECT_EQ(kinds[3].name, "TCP");
}

}  // namespace
}  // namespace distlab::testing
