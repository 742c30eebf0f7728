#pragma once
// A process group over all the ranks of a spawn (tests/support/spawn.hpp), for
// tests that need their own name and (usually short) timeout.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "runtime/comm/process_group.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {

// Blocks until every rank has created it (createProcessGroup's contract).
// `options`: BackendContext::options ("shm.single_copy" = "on", ...).
std::shared_ptr<comm::ProcessGroup> makeTestGroup(
    const RankContext& ctx, const std::string& backend, const std::string& name,
    std::chrono::milliseconds timeout, const std::map<std::string, std::string>& options = {});

}  // namespace distlab::testing
