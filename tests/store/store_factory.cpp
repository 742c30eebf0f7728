#include "tests/store/store_factory.hpp"

#include <algorithm>

#include "runtime/comm/store/file_store.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/comm/store/prefix_store.hpp"
#include "runtime/comm/store/tcp_store.hpp"

namespace distlab::testing {

std::vector<StoreKind> allStoreKinds() {
  using comm::Store;
  std::vector<StoreKind> kinds;
  kinds.push_back({"Hash", [](const TempDir&, std::chrono::milliseconds t) {
                     return std::shared_ptr<Store>(std::make_shared<comm::HashStore>(t));
                   }});
  kinds.push_back({"File",
                   [](const TempDir& dir, std::chrono::milliseconds t) {
                     return std::shared_ptr<Store>(
                         std::make_shared<comm::FileStore>(dir.file("store"), 1, t));
                   },
                   /*supportsDelete=*/false});
  kinds.push_back({"PrefixOverHash", [](const TempDir&, std::chrono::milliseconds t) {
                     auto inner = std::make_shared<comm::HashStore>(t);
                     return std::shared_ptr<Store>(std::make_shared<comm::PrefixStore>("pg0", inner));
                   }});
  kinds.push_back({"TCP", [](const TempDir&, std::chrono::milliseconds t) {
                     comm::TCPStoreOptions o;
                     o.host = "127.0.0.1";
                     o.port = 0;
                     o.isMaster = true;
                     // Connecting uses the timeout too: give it room on a busy
                     // machine, then apply the short timeout the test wants.
                     o.timeout = std::max(t, std::chrono::milliseconds(10000));
                     auto store = std::make_shared<comm::TCPStore>(o);
                     store->setTimeout(t);
                     return std::shared_ptr<Store>(store);
                   }});
  return kinds;
}

}  // namespace distlab::testing
