#include "runtime/comm/comm_trace.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cctype>

#include "runtime/core/trace.hpp"

namespace distlab::comm {
namespace {

std::atomic<uint64_t> gNextId{1};
// The layout of the innermost live ShardLayoutScope on this thread.
thread_local const std::string* tShardLayout = nullptr;

// What the operation moves from this rank: its inputs, or for a receive the
// buffer it fills (a send and its receive then carry the same bytes).
int64_t bytesOf(const WorkInfo& info) {
  const bool receives = info.opType == OpType::kRecv || info.opType == OpType::kRecvAnysource;
  const TensorMetaList& tensors = receives ? info.outputs : info.inputs;
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    bytes += tensors.numel(i) * static_cast<int64_t>(elementSize(tensors.dtype(i)));
  }
  return bytes;
}

// "allreduce #7"; a send or receive names its pair in group ranks, sender
// first ("send 0->2 #3" on rank 0, "recv 0->2 #3" on rank 2: the pair's third
// message that way), so one rank's messages to two peers differ and a reader
// pairs each send with its receive (emulator/predict).
std::string labelOf(const WorkInfo& info) {
  const std::string op = traceOpName(info.opType);
  if (info.opType == OpType::kSend) {
    return fmt::format("{} {}->{} #{}", op, info.rank, info.peer, info.seq);
  }
  if (info.opType == OpType::kRecv) {
    return fmt::format("{} {}->{} #{}", op, info.peer, info.rank, info.seq);
  }
  return fmt::format("{} #{}", op, info.seq);
}

class TraceObserver : public WorkObserver {
 public:
  explicit TraceObserver(const Work& work)
      : label_(labelOf(work.info())),
        layout_(tShardLayout != nullptr ? *tShardLayout : std::string()),
        track_(trace::virtualTrack("comm " + work.info().groupName)) {}

  void onScheduled(const Work& work) override {
    // The group tells apart equal labels of two groups (emulator/predict reads it).
    trace::instant(trace::Category::kMark, "issue " + label_,
                   fmt::format(R"("group":"{}")", work.info().groupName), work.scheduledNs());
  }
  void onStarted(const Work& work) override {
    trace::instant(trace::Category::kMark, "start " + label_, {}, work.startedNs());
  }
  void onCompleted(const Work& work) override {
    const WorkInfo& info = work.info();
    trace::instant(trace::Category::kMark, "end " + label_, {}, work.completedNs());
    const int64_t start = work.startedNs() != 0 ? work.startedNs() : work.completedNs();
    trace::asyncSpan(track_, trace::Category::kComm, label_, id_, start, work.completedNs(),
                     fmt::format(R"("group":"{}","seq":{},"bytes":{},"ok":{}{})", info.groupName,
                                 info.seq, bytesOf(info), work.isSuccess(), layout_));
  }

 private:
  std::string label_;
  std::string layout_;  // Note [Padded shards in the trace]
  uint32_t track_;
  uint64_t id_ = gNextId.fetch_add(1);
};

}  // namespace

std::string traceOpName(OpType op) {
  std::string name(opTypeName(op));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::shared_ptr<WorkObserver> traceObserver(const Work& work) {
  if (!trace::enabled()) return nullptr;
  return std::make_shared<TraceObserver>(work);
}

ShardLayoutScope::ShardLayoutScope(const std::vector<int64_t>& rows,
                                   const std::vector<int64_t>& rowBytes)
    : args_(fmt::format(R"(,"shard_rows":[{}],"row_bytes":[{}])", fmt::join(rows, ","),
                        fmt::join(rowBytes, ","))),
      previous_(tShardLayout),
      active_(true) {
  tShardLayout = &args_;
}

ShardLayoutScope::~ShardLayoutScope() {
  if (active_) tShardLayout = previous_;
}

}  // namespace distlab::comm
