// The operation-name table (runtime/comm/op_names.hpp, Note [Op names]): every
// OpType has all three names, API names identify the operation (recv and recv
// from any source share PyTorch's "recv"), and the pinned rows are the names
// PyTorch writes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/comm/op_names.hpp"

namespace distlab::testing {
namespace {

using namespace distlab::comm;

constexpr size_t kOperations = static_cast<size_t>(OpType::kUnknown);

TEST(OpNames, EveryOpTypeHasARowInEnumOrder) {
  const auto table = opNameTable();
  ASSERT_EQ(table.size(), kOperations);
  for (size_t i = 0; i < kOperations; ++i) {
    const auto type = static_cast<OpType>(i);
    EXPECT_EQ(table[i].type, type) << "row " << i;
    EXPECT_FALSE(table[i].c10d.empty()) << "row " << i;
    EXPECT_FALSE(table[i].api.empty()) << "row " << i;
    EXPECT_FALSE(table[i].profiling.empty()) << "row " << i;
    EXPECT_EQ(opTypeName(type), table[i].c10d);
    EXPECT_EQ(apiName(type), table[i].api);
    EXPECT_EQ(profilingName(type), table[i].profiling);
  }
}

TEST(OpNames, ApiNamesAreUniqueExceptRecvFromAnySource) {
  std::map<std::string_view, OpType> seen;
  for (const OpNames& row : opNameTable()) {
    auto [it, fresh] = seen.emplace(row.api, row.type);
    if (row.type == OpType::kRecvAnysource) {
      EXPECT_FALSE(fresh);
      EXPECT_EQ(it->second, OpType::kRecv);
      continue;
    }
    EXPECT_TRUE(fresh) << "'" << row.api << "' names two operations";
  }
}

TEST(OpNames, ParsingAnApiNameGivesItsOpType) {
  for (const OpNames& row : opNameTable()) {
    const OpType expected = row.type == OpType::kRecvAnysource ? OpType::kRecv : row.type;
    EXPECT_EQ(parseApiName(row.api), expected) << row.api;
  }
  EXPECT_EQ(parseApiName("allreduce"), std::nullopt);  // the old distlab spelling
  EXPECT_EQ(parseApiName("ALLREDUCE"), std::nullopt);  // a c10d name is not an API name
  EXPECT_EQ(parseApiName(""), std::nullopt);
}

TEST(OpNames, C10dNamesAreUnique) {
  std::map<std::string_view, OpType> seen;
  for (const OpNames& row : opNameTable()) {
    EXPECT_TRUE(seen.emplace(row.c10d, row.type).second) << row.c10d;
  }
}

// The names PyTorch writes, pinned where distlab once wrote its own.
TEST(OpNames, PinnedRowsArePyTorchs) {
  EXPECT_EQ(opTypeName(OpType::kAllgatherBase), "_ALLGATHER_BASE");
  EXPECT_EQ(apiName(OpType::kAllgatherBase), "all_gather_into_tensor");
  EXPECT_EQ(profilingName(OpType::kAllgatherBase), "_all_gather_base");
  EXPECT_EQ(profilingName(OpType::kReduceScatterBase), "_reduce_scatter_base");
  EXPECT_EQ(profilingName(OpType::kAlltoallBase), "all_to_all");
  EXPECT_EQ(profilingName(OpType::kAllgatherCoalesced), "all_gather");
  EXPECT_EQ(profilingName(OpType::kRecvAnysource), "recvAnySource");
  EXPECT_EQ(apiName(OpType::kRecvAnysource), "recv");
}

TEST(OpNames, UnknownIsNoOperation) {
  EXPECT_EQ(opTypeName(OpType::kUnknown), "UNKNOWN");
  EXPECT_EQ(profilingName(OpType::kUnknown), "unknown");
  EXPECT_EQ(apiName(OpType::kUnknown), "");
}

}  // namespace
}  // namespace distlab::testing
