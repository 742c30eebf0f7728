// initProcessGroup's init hook (Note [Programs under a scenario]): never
// called without DISTLAB_SCENARIO; with it, prepare sees the options before
// the rendezvous and wrapStore's store becomes the world's; with the variable
// but no hook, initialization refuses, naming distlab::program.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "runtime/comm/group_management.hpp"
#include "runtime/comm/init_hook.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

// Sets the scenario variables for one test and removes them after.
class ScenarioEnv {
 public:
  ScenarioEnv() {
    ::setenv("DISTLAB_SCENARIO", "/nonexistent/s.toml", 1);
    ::setenv("DISTLAB_SCENARIO_RESULT_DIR", "/nonexistent", 1);
  }
  ~ScenarioEnv() {
    ::unsetenv("DISTLAB_SCENARIO");
    ::unsetenv("DISTLAB_SCENARIO_RESULT_DIR");
  }
};

InitOptions oneRank(std::shared_ptr<Store> store) {
  InitOptions o;
  o.store = std::move(store);
  o.rank = 0;
  o.worldSize = 1;
  o.backend = "gloo";  // the hook below replaces it, as a scenario's [cluster] does
  return o;
}

// One test: the hook, once registered, stays for the process (as a linked
// distlab::program's does), so the refusal must be checked before it.
TEST(InitHook, RefusedWithoutTheHookThenRunOnlyUnderAScenario) {
  ASSERT_FALSE(hasInitHook());
  EXPECT_EQ(detail::initHookFor(RuntimeEnv{}), nullptr);
  {
    ScenarioEnv scenario;
    try {
      initProcessGroup(oneRank(std::make_shared<HashStore>()));
      ADD_FAILURE() << "initialized under a scenario without the hook";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("does not link distlab::program"), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(isInitialized());
  }

  EXPECT_THROW(setInitHook(InitHook{}), ValueError);
  int prepared = 0, wrapped = 0;
  auto wrapper = std::make_shared<HashStore>();
  InitHook hook;
  hook.prepare = [&](InitOptions& o, const RuntimeEnv& env) {
    ++prepared;
    EXPECT_EQ(env.scenarioFile, "/nonexistent/s.toml");
    o.backend = "shm";
  };
  hook.wrapStore = [&](std::shared_ptr<Store>, int rank, int worldSize) {
    ++wrapped;
    EXPECT_EQ(rank, 0);
    EXPECT_EQ(worldSize, 1);
    return std::static_pointer_cast<Store>(wrapper);
  };
  setInitHook(hook);
  ASSERT_TRUE(hasInitHook());
  {
    ScenarioEnv scenario;
    auto world = initProcessGroup(oneRank(std::make_shared<HashStore>()));
    EXPECT_EQ(getBackend(world), "shm");
    destroyProcessGroup();
  }
  EXPECT_EQ(prepared, 1);
  EXPECT_EQ(wrapped, 1);
  // The group's creation went through the wrapped store (group keys in it).
  EXPECT_GT(wrapper->numKeys(), 0);
  initProcessGroup(oneRank(std::make_shared<HashStore>()));  // no scenario: no hook
  destroyProcessGroup();
  EXPECT_EQ(prepared, 1);
}

}  // namespace
}  // namespace distlab::comm
