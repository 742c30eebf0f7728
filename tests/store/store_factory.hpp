#pragma once
// Builds each Store implementation for the parameterised store suites, so a
// test written once runs against HashStore, FileStore, PrefixStore and TCPStore.
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/comm/store/store.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {

struct StoreKind {
  std::string name;
  // Returns a fresh, empty store with the given default timeout. `dir` is a
  // scratch directory that outlives the store.
  std::function<std::shared_ptr<comm::Store>(const TempDir& dir, std::chrono::milliseconds)> make;
  bool supportsDelete = true;
};

std::vector<StoreKind> allStoreKinds();

inline void PrintTo(const StoreKind& kind, std::ostream* os) { *os << kind.name; }

// Text as store bytes and back; short names because the store suites write many literals.
inline comm::Bytes b(const std::string& text) { return comm::Bytes(text.begin(), text.end()); }
inline std::string s(const comm::Bytes& v) { return std::string(v.begin(), v.end()); }

}  // namespace distlab::testing
