#include "tests/support/test_groups.hpp"

namespace distlab::testing {

std::shared_ptr<comm::ProcessGroup> makeTestGroup(
    const RankContext& ctx, const std::string& backend, const std::string& name,
    std::chrono::milliseconds timeout, const std::map<std::string, std::string>& options) {
  comm::ProcessGroupConfig config;
  config.store = ctx.store;
  config.rank = ctx.rank;
  config.size = ctx.worldSize;
  config.name = name;
  config.timeout = timeout;
  config.backendSpec = backend;
  return comm::createProcessGroup(config, options);
}

}  // namespace distlab::testing
